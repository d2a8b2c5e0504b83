"""The authentication checks of the domain checker (pure): SPF (RFC 7208), DKIM (RFC 6376) and DMARC
(RFC 7489)."""

from __future__ import annotations

from dataclasses import dataclass, field

from outreach_core.deliverability.check_kit import (
    MAX_SPF_VISITS,
    PROVIDER_SPF,
    SPF_LOOKUP_LIMIT,
    SPF_VOID_LIMIT,
    WEIGHTS,
    check,
    src,
)
from outreach_core.deliverability.facts import Answer, Facts
from outreach_core.deliverability.records import (
    DkimKey,
    has_macro,
    is_dmarc,
    parse_dkim,
    parse_dmarc,
    parse_spf,
    spf_records,
    txt_text,
)
from outreach_core.deliverability.rules import COMMON_SELECTORS
from outreach_core.deliverability.schemas import Check, MxFamily, Status

# --- SPF ----------------------------------------------------------------------------------------------------


@dataclass
class _SpfWalk:
    lookups: int = 0
    voids: int = 0
    visits: int = 0
    problems: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)


def walk_spf(tree: dict[str, Answer], name: str, text: str, stack: list[str], walk: _SpfWalk) -> None:
    walk.visits += 1
    if walk.visits > MAX_SPF_VISITS:
        return
    record = parse_spf(text)
    walk.problems.extend(f"{name}: {e}" for e in record.errors)
    targets: list[str] = []
    for term in record.terms:
        if term.modifier:
            continue
        if term.name in ("a", "mx", "ptr", "exists", "include"):
            walk.lookups += 1
        if term.name == "ptr":
            walk.problems.append(f"{name}: the ptr mechanism must not be used (RFC 7208 section 5.5)")
        if term.name == "include":
            targets.append(term.value)
    if record.redirect and record.all_qualifier is None:
        walk.lookups += 1
        targets.append(record.redirect)
    for raw in targets:
        target = raw.rstrip(".").lower()
        if has_macro(target):
            walk.unknown.append(f"{target} uses macros and was not followed")
            continue
        if target in stack or target == name:
            chain = " -> ".join([*stack, name, target])
            walk.problems.append(f"include loop: {chain}")
            continue
        answer = tree.get(target)
        if answer is None:
            walk.problems.append(f"{target}: the include chain is too long to follow")
            continue
        if answer.error:
            walk.unknown.append(f"{target}: {answer.error}")
            continue
        found = spf_records(answer.records)
        if not found:
            walk.voids += 1
            walk.problems.append(
                f"{target} (included by {name}) has no SPF record: receivers treat that as an error"
            )
            continue
        if len(found) > 1:
            walk.problems.append(f"{target} has {len(found)} SPF records (one is allowed)")
            continue
        before = walk.lookups
        walk.names.add(target)
        walk_spf(tree, target, found[0], [*stack, name], walk)
        walk.resolved.append(f"{target} ({walk.lookups - before} lookups inside)")


def spf_check(facts: Facts, family: MxFamily) -> Check:
    domain, label = facts.domain, "SPF"
    source = src("rfc", "RFC 7208")
    answer = facts.spf.get(domain, Answer(error="not looked up"))
    provider_include = PROVIDER_SPF.get(family, "")
    suggested = f"include:{provider_include} ~all" if provider_include else "mx ~all"
    fix_new = f'{domain} TXT "v=spf1 {suggested}"'
    if answer.error:
        return check("spf", label, "info", 0, f"Could not look up SPF: {answer.error}.", source)
    records = spf_records(answer.records)
    if not records:
        return check(
            "spf",
            label,
            "fail",
            0,
            "No SPF record: receivers cannot tell which servers may send as this domain.",
            src("provider", "Google and Yahoo sender requirements (2024); RFC 7208"),
            fix=f"Publish {fix_new} (list every service that sends as {domain}).",
        )
    if len(records) > 1:
        return check(
            "spf",
            label,
            "fail",
            0,
            f"{len(records)} SPF records: receivers treat that as an error (permerror) and SPF fails.",
            src("rfc", "RFC 7208 section 4.5"),
            details=records,
            fix="Merge them into one TXT record starting with v=spf1 and delete the others.",
        )
    walk = _SpfWalk()
    walk_spf(facts.spf, domain, records[0], [], walk)
    record = parse_spf(records[0])
    details = [f"Record: {records[0]}", f"DNS lookups: {walk.lookups} of {SPF_LOOKUP_LIMIT}"]
    details += [f"Includes resolved: {r}" for r in walk.resolved]
    details += walk.unknown
    if walk.problems or walk.lookups > SPF_LOOKUP_LIMIT or walk.voids > SPF_VOID_LIMIT:
        problems = list(walk.problems)
        if walk.lookups > SPF_LOOKUP_LIMIT:
            problems.append(f"{walk.lookups} DNS lookups, over the limit of {SPF_LOOKUP_LIMIT}")
        return check(
            "spf",
            label,
            "fail",
            0,
            "SPF is broken (permerror): " + problems[0] + ".",
            src("rfc", "RFC 7208 sections 4.6.4 and 5.2"),
            details=problems + details,
            fix="Fix the record so that it has one include per service, no loops and at most 10 DNS lookups "
            f"(replace includes by ip4:/ip6: ranges where needed), e.g. {fix_new}.",
        )
    if walk.unknown and not walk.resolved and record.includes:
        return check(
            "spf",
            label,
            "info",
            0,
            "Could not follow every include of the SPF record.",
            source,
            details=details,
        )
    qualifier = record.all_qualifier
    if qualifier == "+":
        return check(
            "spf",
            label,
            "fail",
            0,
            "The record ends with +all: anyone may send email as this domain.",
            src("rfc", "RFC 7208 section 5.1"),
            details=details,
            fix=f"End the record with ~all or -all: {fix_new}.",
        )
    if qualifier == "?" or (qualifier is None and record.redirect is None):
        what = "?all (neutral)" if qualifier == "?" else "no all mechanism (neutral)"
        return check(
            "spf",
            label,
            "warn",
            WEIGHTS["spf"] // 2,
            f"The record ends with {what}: servers it does not list are not refused.",
            src("opinion", "RFC 7208 section 8.2"),
            details=details,
            fix=f"End the record with ~all (or -all): {fix_new}.",
        )
    if provider_include and provider_include not in walk.names:
        provider = "Google Workspace" if family == "google" else "Microsoft 365"
        return check(
            "spf",
            label,
            "warn",
            WEIGHTS["spf"] // 2,
            f"The record does not include {provider}'s servers, which send this domain's email.",
            src("provider", f"{provider} SPF set-up"),
            details=details,
            fix=f"Add include:{provider_include} before the all mechanism.",
        )
    return check(
        "spf",
        label,
        "pass",
        WEIGHTS["spf"],
        f"One valid SPF record, {walk.lookups} of 10 lookups.",
        source,
        details=details,
    )


# --- DKIM ---------------------------------------------------------------------------------------------------


def _dkim_fix(domain: str, family: MxFamily, selector: str | None) -> str:
    if family == "google":
        return (
            "In the Google Admin console (Apps > Google Workspace > Gmail > Authenticate email) generate a "
            f'2048-bit key, publish it as google._domainkey.{domain} TXT "v=DKIM1; k=rsa; p=<key>" and '
            "click Start authentication."
        )
    if family == "microsoft":
        dashed = domain.replace(".", "-")
        return (
            "In Microsoft Defender (Email authentication settings > DKIM) publish "
            f"selector1._domainkey.{domain} "
            f"CNAME selector1-{dashed}._domainkey.<tenant>.onmicrosoft.com (and selector2 likewise), then "
            "enable signing."
        )
    name = f"{selector or '<selector>'}._domainkey.{domain}"
    return (
        "Turn on DKIM signing at your email host and publish the key it gives you: "
        f'{name} TXT "v=DKIM1; k=rsa; p=<key>".'
    )


def dkim_check(facts: Facts, family: MxFamily) -> Check:
    domain, label = facts.domain, "DKIM"
    source = src("rfc", "RFC 6376, RFC 8301 (key sizes), RFC 8463 (ed25519)")
    keys: list[tuple[str, DkimKey]] = []
    errors: list[str] = []
    for selector, answer in facts.dkim.items():
        if answer.error:
            errors.append(f"{selector}: {answer.error}")
            continue
        for text in (txt_text(r) for r in answer.records):
            key = parse_dkim(text)
            if key is not None:
                keys.append((selector, key))
    details = [
        f"{s}._domainkey.{domain}: "
        + (
            f"malformed: {k.error}"
            if k.error
            else "revoked (empty p=)"
            if k.revoked
            else f"{k.key_type} {k.bits}-bit"
        )
        for s, k in keys
    ]
    fix = _dkim_fix(domain, family, facts.selector)
    good = [
        (s, k)
        for s, k in keys
        if not k.error and not k.revoked and (k.key_type == "ed25519" or (k.bits or 0) >= 2048)
    ]
    weak = [
        (s, k)
        for s, k in keys
        if not k.error and not k.revoked and k.key_type == "rsa" and 1024 <= (k.bits or 0) < 2048
    ]
    tiny = [
        (s, k)
        for s, k in keys
        if not k.error and not k.revoked and k.key_type == "rsa" and (k.bits or 0) < 1024
    ]
    malformed = [(s, k) for s, k in keys if k.error]
    if (
        facts.selector
        and not any(s == facts.selector for s, _ in keys)
        and facts.selector not in [e.split(":", 1)[0] for e in errors]
    ):
        return check(
            "dkim",
            label,
            "fail",
            0,
            f"No DKIM key at {facts.selector}._domainkey.{domain}.",
            source,
            details=details,
            fix=fix,
        )
    if malformed and not good and not weak:
        s, k = malformed[0]
        return check(
            "dkim",
            label,
            "fail",
            0,
            f"The DKIM key at {s}._domainkey.{domain} is malformed: {k.error}.",
            source,
            details=details,
            fix=fix,
        )
    if tiny and not good and not weak:
        s, k = tiny[0]
        return check(
            "dkim",
            label,
            "fail",
            0,
            f"The DKIM key at {s} is {k.bits}-bit: receivers must refuse keys under 1024 bits.",
            src("rfc", "RFC 8301 section 3.2"),
            details=details,
            fix=fix,
        )
    if good:
        s, k = good[0]
        what = "ed25519" if k.key_type == "ed25519" else f"{k.bits}-bit RSA"
        status: Status = "warn" if malformed else "pass"
        return check(
            "dkim",
            label,
            status,
            WEIGHTS["dkim"] if status == "pass" else WEIGHTS["dkim"] * 3 // 4,
            f"DKIM key found at {s} ({what})."
            + (" Another selector has a malformed key." if malformed else ""),
            source,
            details=details,
        )
    if weak:
        s, k = weak[0]
        return check(
            "dkim",
            label,
            "warn",
            WEIGHTS["dkim"] * 3 // 5,
            f"DKIM key found at {s}, but only {k.bits}-bit: 2048 bits is recommended.",
            src("rfc", "RFC 8301 section 3.2"),
            details=details,
            fix=fix,
        )
    if keys:  # revoked only
        return check(
            "dkim",
            label,
            "warn",
            0,
            "The only DKIM keys found are revoked (empty p=).",
            source,
            details=details,
            fix=fix,
        )
    if errors:
        return check(
            "dkim", label, "info", 0, "Could not look up the DKIM selectors.", source, details=errors
        )
    tried = ", ".join(COMMON_SELECTORS[:6])
    return check(
        "dkim",
        label,
        "warn",
        0,
        f"No DKIM key at the common selectors ({tried} ...). If your email host signs with another selector, "
        "check it with `selector`.",
        src("provider", "Google and Yahoo sender requirements (2024): DKIM"),
        fix=fix,
    )


# --- DMARC --------------------------------------------------------------------------------------------------


def dmarc_check(facts: Facts) -> Check:
    domain, label = facts.domain, "DMARC"
    source = src("rfc", "RFC 7489")
    fix_new = f'_dmarc.{domain} TXT "v=DMARC1; p=none; rua=mailto:dmarc-reports@{domain}"'
    if facts.dmarc.error:
        return check("dmarc", label, "info", 0, f"Could not look up DMARC: {facts.dmarc.error}.", source)
    records = [t for t in (txt_text(r) for r in facts.dmarc.records) if is_dmarc(t)]
    inherited = ""
    if not records and facts.dmarc_org is not None:
        org, answer = facts.dmarc_org
        if answer.error:
            return check(
                "dmarc", label, "info", 0, f"Could not look up DMARC of {org}: {answer.error}.", source
            )
        org_records = [t for t in (txt_text(r) for r in answer.records) if is_dmarc(t)]
        if len(org_records) == 1:
            records, inherited = org_records, org
    if not records:
        return check(
            "dmarc",
            label,
            "fail",
            0,
            "No DMARC record: Gmail and Yahoo require one from bulk senders.",
            src("provider", "Google and Yahoo sender requirements (2024): DMARC"),
            fix=f"Publish {fix_new} (start with p=none and read the reports).",
        )
    if len(records) > 1:
        return check(
            "dmarc",
            label,
            "fail",
            0,
            f"{len(records)} DMARC records: receivers ignore them all, as if there were none.",
            src("rfc", "RFC 7489 section 6.6.3"),
            details=records,
            fix=f"Keep one record at _dmarc.{domain} and delete the others.",
        )
    record = parse_dmarc(records[0])
    details = [f"Record: {records[0]}"]
    if inherited:
        details.append(f"Inherited from the organizational domain {inherited} (its sp= applies)")
    if record.errors:
        return check(
            "dmarc",
            label,
            "fail",
            0,
            "The DMARC record is invalid: " + record.errors[0] + ".",
            src("rfc", "RFC 7489 section 6.3"),
            details=record.errors + details,
            fix=f"Replace it, e.g. {fix_new}.",
        )
    policy = (record.tags.get("sp") if inherited else None) or record.policy or "none"
    policy = policy.lower()
    details.append(f"Policy: {policy}; pct={record.pct}")
    if record.rua:
        details.append("Aggregate reports go to " + ", ".join(record.rua))
    else:
        details.append("No rua=: you receive no reports of who sends as your domain")
    aspf, adkim = record.tags.get("aspf", "r").lower(), record.tags.get("adkim", "r").lower()
    details.append(
        f"Alignment: SPF {'strict' if aspf == 's' else 'relaxed'}, "
        f"DKIM {'strict' if adkim == 's' else 'relaxed'}. "
        f"Your emails pass DMARC when your email host signs them with DKIM for {domain} "
        "(not its own domain) or "
        f"sends them from servers in your SPF with a {domain} return path"
        + ("; strict alignment needs exactly that name, not a subdomain." if "s" in (aspf, adkim) else ".")
    )
    if policy == "none":
        return check(
            "dmarc",
            label,
            "warn",
            WEIGHTS["dmarc"] // 2,
            "DMARC is in monitoring mode (p=none): it meets Gmail's and Yahoo's rules but protects nothing.",
            src("opinion", "RFC 7489 section 6.3; Google and Yahoo sender requirements (2024)"),
            details=details,
            fix=f'Once the reports show only your own services, move to _dmarc.{domain} TXT "v=DMARC1; '
            f'p=quarantine; rua=mailto:dmarc-reports@{domain}".',
        )
    if record.pct < 100:
        return check(
            "dmarc",
            label,
            "warn",
            WEIGHTS["dmarc"] * 3 // 4,
            f"p={policy} applies to only {record.pct}% of failing mail.",
            src("rfc", "RFC 7489 section 6.3 (pct)"),
            details=details,
            fix="Remove pct= (or set pct=100) once you are confident.",
        )
    return check("dmarc", label, "pass", WEIGHTS["dmarc"], f"DMARC policy {policy}.", source, details=details)
