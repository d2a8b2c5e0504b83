"""Pure enrichment rules: a lead's country and timezone from what it says (the country and time-zone tables
are in `outreach_core.kernel.geo`, the email provider of a domain in `outreach_core.targets.esp`).

Nothing here does network I/O. The country and timezone tables come from data files shipped inside installed
packages (`tzdata`'s `zone.tab`, `iso3166.tab` and `tzdata.zi`, `tldextract`'s public-suffix snapshot,
`phonenumbers`' metadata); they are read once, on first use.

See docs/enrichment.md for what is derived from what and in which order.
"""

from __future__ import annotations

from functools import cache, lru_cache

import phonenumbers
import tldextract
from phonenumbers import timezone as phone_timezones

from outreach_core.kernel.geo import (
    country_from_timezone,
    country_single_zone,
    iso_names,
    normalize_country,
    normalize_timezone,
    one_local_time,
    valid_zones,
)
from outreach_core.targets.schemas import CountrySource

__all__ = [
    "country_from_domain",
    "country_from_phone",
    "infer_country",
    "infer_timezone",
]

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
