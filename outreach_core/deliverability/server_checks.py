"""The domain checker's checks of existence, mail servers, blocklists and domain age (pure)."""

from __future__ import annotations

from datetime import datetime

from outreach_core.deliverability.check_kit import NEW_DOMAIN_DAYS, WEIGHTS, YOUNG_DOMAIN_DAYS, check, src
from outreach_core.deliverability.facts import Answer, Facts
from outreach_core.deliverability.records import (
    parse_mx,
)
from outreach_core.deliverability.schemas import Check, MxFamily
from outreach_core.kernel.urls import is_blocked_address

# --- existence and mail servers -----------------------------------------------------------------------------


def known_to_exist(facts: Facts) -> bool | None:
    """True when the domain has any record; None when nothing answered (never a wrong "does not exist")."""
    answers = [*facts.presence, facts.mx, facts.spf.get(facts.domain, Answer())]
    if any(a.records for a in answers):
        return True
    if any(a.error for a in answers):
        return None
    return False


def exists_check(domain: str, exists: bool | None) -> Check:
    source = src("rfc", "RFC 1034 (DNS)")
    if exists is None:
        return check("exists", "Domain exists", "info", 0, "Could not tell: DNS did not answer.", source)
    if exists:
        return check("exists", "Domain exists", "pass", 0, f"{domain} exists in DNS.", source)
    return check(
        "exists",
        "Domain exists",
        "fail",
        0,
        f"{domain} has no DNS records at all.",
        source,
        fix=f"Check the spelling; otherwise register {domain} and set up its email first.",
    )


def mx_family(mx: Answer) -> tuple[MxFamily, str]:
    """Who receives the domain's email: google, microsoft, other or none, and a label for people."""
    if mx.error:
        return "other", f"Unknown (the mail servers could not be looked up: {mx.error})"
    hosts = [h.host for h in parse_mx(mx.records) if h.host]
    if not hosts:
        return "none", "No mail server"
    if any(h.endswith((".google.com", ".googlemail.com")) or h == "google.com" for h in hosts):
        return "google", "Google Workspace"
    if any(h.endswith(".outlook.com") for h in hosts):
        return "microsoft", "Microsoft 365"
    return "other", f"Other ({hosts[0]})"


def mx_check(facts: Facts, family: MxFamily, allow_private: bool) -> Check:
    domain, label = facts.domain, "Mail servers (MX)"
    source = src("rfc", "RFC 5321 section 5.1, RFC 7505 (null MX)")
    if facts.mx.error:
        return check("mx", label, "info", 0, f"Could not look up MX records: {facts.mx.error}.", source)
    hosts = parse_mx(facts.mx.records)
    example = f"{domain} MX 1 smtp.google.com. (Google Workspace; your email host gives its own)"
    if not hosts:
        return check(
            "mx",
            label,
            "fail",
            0,
            "No MX record: replies to your emails cannot reach you, and many receivers refuse such senders.",
            src("opinion", "RFC 5321 section 5.1; receivers' anti-spoofing checks"),
            fix=f"Publish the MX records your email host gives you, e.g. {example}.",
        )
    if len(hosts) == 1 and hosts[0].host == "":
        return check(
            "mx",
            label,
            "fail",
            0,
            "The domain declares that it receives no email (null MX): replies bounce.",
            source,
            fix=f"Remove the null MX record ({domain} MX 0 .) and publish your email host's MX records.",
        )
    details = [f"{h.preference} {h.host}" for h in hosts]
    unresolved, private, unknown = [], [], []
    for host, answer in facts.mx_addresses.items():
        if answer.error:
            unknown.append(host)
        elif not answer.records:
            unresolved.append(host)
        elif not allow_private and any(is_blocked_address(ip) for ip in answer.records):
            private.append(host)
        for ip in answer.records:
            details.append(f"{host} has address {ip}")
    if unresolved or private:
        problems = [f"{h} has no IPv4 address" for h in unresolved] + [
            f"{h} points at a private or reserved address" for h in private
        ]
        usable = len(facts.mx_addresses) - len(unresolved) - len(private)
        return check(
            "mx",
            label,
            "warn" if usable > 0 else "fail",
            WEIGHTS["mx"] // 2 if usable > 0 else 0,
            "; ".join(problems) + ".",
            source,
            details=details,
            fix="Point every MX host at a public address (an A record), or remove the hosts that do not "
            "receive email.",
        )
    summary = f"{len(hosts)} mail server{'s' if len(hosts) != 1 else ''}"
    who = {"google": "Google Workspace", "microsoft": "Microsoft 365"}.get(family, hosts[0].host)
    summary += f" ({who})."
    if unknown:
        details.append("Not looked up (DNS did not answer): " + ", ".join(unknown))
    return check("mx", label, "pass", WEIGHTS["mx"], summary, source, details=details)


# --- blocklists and domain age ------------------------------------------------------------------------------


def _listing(answer: Answer) -> str:
    """listed, clear, refused or unknown."""
    if answer.error:
        return "unknown"
    codes = [r for r in answer.records if r.startswith("127.")]
    if not codes:
        return "clear"
    if all(r.startswith("127.255.255.") for r in codes):
        return "refused"
    return "listed"


def blocklist_check(facts: Facts) -> Check:
    label = "Blocklists"
    source = src("opinion", "DNSBL convention (RFC 5782); the zones configured on this server")
    if not facts.dnsbl_zones and not facts.dbl_zones:
        return check(
            "blacklists",
            label,
            "info",
            0,
            "No blocklist zones are configured on this server (OUTREACH_DNSBL_ZONES, OUTREACH_DBL_ZONES).",
            source,
        )
    listed, details, unknown, asked = [], [], [], 0
    hosts = {ip: host for host, a in facts.mx_addresses.items() for ip in a.records}
    for (ip, zone), answer in facts.dnsbl.items():
        asked += 1
        state = _listing(answer)
        what = f"{ip} ({hosts.get(ip, 'mail server')}) on {zone}"
        if state == "listed":
            listed.append(f"{what}: listed ({', '.join(answer.records)})")
        elif state in ("unknown", "refused"):
            unknown.append(f"{what}: {'the zone refused the query' if state == 'refused' else answer.error}")
        else:
            details.append(f"{what}: not listed")
    for zone, answer in facts.dbl.items():
        asked += 1
        state = _listing(answer)
        if state == "listed":
            listed.append(f"{facts.domain} on {zone}: listed ({', '.join(answer.records)})")
        elif state in ("unknown", "refused"):
            unknown.append(f"{facts.domain} on {zone}: {'refused' if state == 'refused' else answer.error}")
        else:
            details.append(f"{facts.domain} on {zone}: not listed")
    if listed:
        return check(
            "blacklists",
            label,
            "fail",
            0,
            f"Listed on {len(listed)} blocklist{'s' if len(listed) != 1 else ''}: many receivers refuse "
            "such mail.",
            source,
            details=listed + unknown + details,
            fix="Find why it was listed (an open relay, a compromised account, spam complaints), fix "
            "that, then ask each blocklist's operator for removal on its website.",
        )
    if asked == 0:
        return check("blacklists", label, "info", 0, "No mail server address to look up.", source)
    if len(unknown) == asked:
        return check(
            "blacklists", label, "info", 0, "The blocklists could not be asked.", source, details=unknown
        )
    return check(
        "blacklists",
        label,
        "pass",
        WEIGHTS["blacklists"],
        "Not listed on the configured blocklists.",
        source,
        details=details + unknown,
    )


def age_check(facts: Facts, now: datetime) -> Check:
    label = "Domain age"
    source = src("opinion", "mailbox providers filter mail from newly registered domains harder")
    rdap = facts.rdap
    if not rdap.configured:
        return check(
            "domain_age",
            label,
            "info",
            0,
            "Domain age is not checked on this server (OUTREACH_RDAP_URL is not set).",
            source,
        )
    if rdap.registered is None:
        return check(
            "domain_age", label, "info", 0, f"Could not learn the domain's age: {rdap.error}.", source
        )
    days = (now - rdap.registered).days
    details = [f"Registered {rdap.registered.date().isoformat()}"]
    if days < 0:
        return check(
            "domain_age",
            label,
            "info",
            0,
            "The registry gives a date in the future.",
            source,
            details=details,
        )
    if days < NEW_DOMAIN_DAYS:
        return check(
            "domain_age",
            label,
            "fail",
            0,
            f"Registered {days} days ago: brand-new domains land in spam.",
            source,
            details=details,
            fix="Warm the domain up for a few weeks (a few emails a day, rising) before a campaign.",
        )
    if days < YOUNG_DOMAIN_DAYS:
        return check(
            "domain_age",
            label,
            "warn",
            WEIGHTS["domain_age"] // 2,
            f"Registered {days} days ago: keep volumes low until it is 3 months old.",
            source,
            details=details,
            fix="Keep sending volume low and warm up gradually.",
        )
    years = days // 365
    age = f"{years} year{'s' if years != 1 else ''}" if years else f"{days} days"
    return check(
        "domain_age", label, "pass", WEIGHTS["domain_age"], f"Registered {age} ago.", source, details=details
    )
