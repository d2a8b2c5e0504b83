"""Which email provider (ESP) serves a domain: from its MX hosts, or without DNS for the big consumer
domains (pure, no I/O). The `esp` of a lead and of the domain cache (`mail_domains.py`)."""

from __future__ import annotations

import re

from outreach_core.targets.schemas import Esp

# A host belongs to a provider when it equals one of these domains or ends with "." + one of them.
_MX_PROVIDERS: tuple[tuple[Esp, tuple[str, ...]], ...] = (
    # aspmx.l.google.com, alt1.aspmx.l.google.com, smtp.google.com, aspmx2.googlemail.com
    ("google", ("google.com", "googlemail.com")),
    # <tenant>.mail.protection.outlook.com, *.olc.protection.outlook.com, mx*.hotmail.com, 21Vianet (.cn)
    ("microsoft", ("outlook.com", "hotmail.com", "outlook.cn")),
    # mta5.am0.yahoodns.net (also AOL and Yahoo small business)
    ("yahoo", ("yahoodns.net", "yahoo.com")),
    # mail.protonmail.ch, mailsec.protonmail.ch
    ("proton", ("protonmail.ch", "proton.me")),
    # mx01.mail.icloud.com (iCloud+ custom domains, me.com, mac.com)
    ("icloud", ("icloud.com", "me.com")),
    # mx.zoho.com, mx.zoho.eu, mx.zohomail.com and the other regional data centres
    (
        "zoho",
        (
            "zoho.com",
            "zoho.eu",
            "zoho.in",
            "zoho.com.au",
            "zoho.jp",
            "zoho.sa",
            "zohomail.com",
            "zohomail.eu",
            "zohocloud.ca",
        ),
    ),
)

# Mailbox domains of the big consumer providers: their provider is known without asking DNS.
_CONSUMER_DOMAINS: dict[str, Esp] = {
    "gmail.com": "google",
    "googlemail.com": "google",
    "outlook.com": "microsoft",
    "hotmail.com": "microsoft",
    "live.com": "microsoft",
    "msn.com": "microsoft",
    "windowslive.com": "microsoft",
    "yahoo.com": "yahoo",
    "ymail.com": "yahoo",
    "rocketmail.com": "yahoo",
    "aol.com": "yahoo",
    "proton.me": "proton",
    "protonmail.com": "proton",
    "protonmail.ch": "proton",
    "pm.me": "proton",
    "icloud.com": "icloud",
    "me.com": "icloud",
    "mac.com": "icloud",
    "zoho.com": "zoho",
    "zohomail.com": "zoho",
    "zohomail.eu": "zoho",
}
# Country variants: yahoo.co.uk, yahoo.fr, hotmail.de, outlook.com.br, live.nl ...
_CONSUMER_VARIANTS = re.compile(
    r"^(yahoo|hotmail|outlook|live)\.(?:com|[a-z]{2}|co\.[a-z]{2}|com\.[a-z]{2})$"
)
_VARIANT_ESP: dict[str, Esp] = {
    "yahoo": "yahoo",
    "hotmail": "microsoft",
    "outlook": "microsoft",
    "live": "microsoft",
}


def _clean_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def _host_provider(host: str) -> Esp | None:
    for esp, domains in _MX_PROVIDERS:
        if any(host == d or host.endswith("." + d) for d in domains):
            return esp
    return None


def consumer_esp(domain: str) -> Esp | None:
    """The provider of a well-known consumer mailbox domain (`gmail.com` -> google), else None."""
    domain = _clean_host(domain)
    known = _CONSUMER_DOMAINS.get(domain)
    if known is not None:
        return known
    match = _CONSUMER_VARIANTS.match(domain)
    return _VARIANT_ESP[match.group(1)] if match else None


def parse_mx(answers: list[str]) -> list[str]:
    """Mail-server hosts from MX answers (`"10 mx.example.com."`), most preferred first, lower-case, no dot.

    A null MX (`"0 ."`, RFC 7505: the domain accepts no mail) contributes no host. Answers that are not
    `preference host` pairs are ignored. Equal preferences are ordered by host name, so the result does not
    depend on the order the server answered in."""
    parsed: list[tuple[int, str]] = []
    for answer in answers:
        parts = answer.split()
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        host = _clean_host(parts[1])
        if host:
            parsed.append((int(parts[0]), host))
    return [host for _, host in sorted(parsed)]


def classify_esp(mx_hosts: list[str]) -> Esp:
    """The email provider behind a domain, from its MX hosts in preference order.

    The most preferred host decides: a known provider's host gives that provider (a security gateway in
    front of Google is therefore `other`, which is what a sender sees); any other host gives `other`; no
    host at all (no MX, null MX, or a failed lookup) gives `unknown`."""
    hosts = [h for h in (_clean_host(h) for h in mx_hosts) if h]
    if not hosts:
        return "unknown"
    return _host_provider(hosts[0]) or "other"
