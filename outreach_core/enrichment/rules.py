"""Pure enrichment rules: the email provider from MX hosts, country and timezone from what a lead says
(the country and time-zone tables themselves are in `outreach_core.geo`).

Nothing here does network I/O. The country and timezone tables come from data files shipped inside installed
packages (`tzdata`'s `zone.tab`, `iso3166.tab` and `tzdata.zi`, `tldextract`'s public-suffix snapshot,
`phonenumbers`' metadata); they are read once, on first use.

See docs/enrichment.md for what is derived from what and in which order.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

import phonenumbers
import tldextract
from phonenumbers import timezone as phone_timezones

from outreach_core.geo import (
    country_from_timezone,
    country_single_zone,
    iso_names,
    normalize_country,
    normalize_timezone,
    one_local_time,
    valid_zones,
)
from outreach_core.leads.schemas import CountrySource, Esp

__all__ = [
    "classify_esp",
    "consumer_esp",
    "country_from_domain",
    "country_from_phone",
    "infer_country",
    "infer_timezone",
    "parse_mx",
]

# --- email provider -------------------------------------------------------------------------------------

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


# --- phone ------------------------------------------------------------------------------------------------


def _parse_phone(phone: str | None, region: str | None) -> phonenumbers.PhoneNumber | None:
    """A valid number, or None. Without `region` only international format (`+49 ...`, `0049 ...`) parses."""
    if not phone:
        return None
    text = phone.strip()
    if text.startswith("00"):
        text = "+" + text[2:]
    if text.startswith("+"):
        region = None  # the number carries its country: one cache entry whatever the lead's country
    elif region is None:
        return None
    return _parse_valid(text, region)


@lru_cache(maxsize=8192)
def _parse_valid(text: str, region: str | None) -> phonenumbers.PhoneNumber | None:
    """Parsing is the slow part of enrichment; a lead's number is read twice (country, then timezone)."""
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None  # not a phone number: nothing to derive, which is a normal outcome for free-text fields
    return number if phonenumbers.is_valid_number(number) else None


def country_from_phone(phone: str | None) -> str | None:
    """The country of a phone number written in international format (`+33 6 12 34 56 78` -> FR)."""
    number = _parse_phone(phone, None)
    if number is None:
        return None
    region = phonenumbers.region_code_for_number(number)
    return region if region and region.isalpha() and region in iso_names() else None


def _zone_from_phone(phone: str | None, country: str | None) -> str | None:
    number = _parse_phone(phone, country)
    if number is None:
        return None
    region = phonenumbers.region_code_for_number(number)
    if country is not None and region != country:
        return None  # a foreign number says nothing about where this lead is
    zones = [z for z in phone_timezones.time_zones_for_number(number) if z in valid_zones()]
    return one_local_time(zones, region)


# --- domains ----------------------------------------------------------------------------------------------

# Country-code TLDs sold and used as generic ones (`acme.io`, `acme.ai`): alone they say nothing about a
# country. Under a second-level suffix (`acme.com.co`) they are real national registrations.
_VANITY_CCTLDS = frozenset(
    {
        "ac", "ad", "ag", "ai", "am", "as", "bz", "cc", "cd", "cf", "co", "cx", "dj", "fm", "ga", "gd", "gg",
        "gl", "gq", "gs", "io", "la", "ly", "md", "me", "ml", "ms", "mu", "nu", "pw", "sc", "sh",
        "so", "st", "tk", "tm", "to", "tv", "vc", "vg", "ws",
    }
)  # fmt: skip


@cache
def _extractor() -> tldextract.TLDExtract:
    """Public-suffix parsing from the snapshot bundled with tldextract: no fetch, no disk cache."""
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


@lru_cache(maxsize=65536)
def country_from_domain(host_or_url: str | None) -> str | None:
    """The country of a country-code domain (`acme.de` -> DE, `acme.co.uk` -> GB), from a bare domain, an
    email domain or a website URL. Generic TLDs (`.com`, `.io`, `.eu`) give None."""
    if not host_or_url:
        return None
    suffix = _extractor()(host_or_url.strip().lower()).suffix
    if not suffix:
        return None
    last = suffix.rsplit(".", 1)[-1]
    if len(last) != 2 or not last.isalpha():
        return None
    if "." not in suffix and last in _VANITY_CCTLDS:
        return None
    code = "GB" if last == "uk" else last.upper()
    return code if code in iso_names() else None


# --- the two inferences -----------------------------------------------------------------------------------


def infer_country(
    *,
    timezone: str | None,
    phone: str | None,
    email_domain: str | None,
    website: str | None,
    explicit_country: str | None,
) -> tuple[str | None, CountrySource | None]:
    """`(country, countrySource)` for a lead.

    A country the lead already has (recognised by `normalize_country`) wins, with source None: it was given,
    not inferred. Otherwise the first source that gives a country decides, in this order: `timezone` (its IANA
    country), `phone` (international format only), `email` (country-code domain of the address), `website`
    (country-code domain). Nothing usable gives `(None, None)`."""
    given = normalize_country(explicit_country)
    if given is not None:
        return given, None
    from_tz = country_from_timezone(normalize_timezone(timezone))
    if from_tz is not None:
        return from_tz, "timezone"
    from_phone = country_from_phone(phone)
    if from_phone is not None:
        return from_phone, "phone"
    from_email = country_from_domain(email_domain)
    if from_email is not None:
        return from_email, "email"
    from_site = country_from_domain(website)
    if from_site is not None:
        return from_site, "website"
    return None, None


def infer_timezone(country: str | None, phone: str | None) -> str | None:
    """A timezone for a lead that has none, or None when it cannot be told.

    The phone number first (area codes narrow big countries down: `+1 212` -> America/New_York), when it
    belongs to `country`; then the country itself when all its zones keep one local time (DE ->
    Europe/Berlin; US, ES or AU give None)."""
    country = normalize_country(country)
    return _zone_from_phone(phone, country) or country_single_zone(country)
