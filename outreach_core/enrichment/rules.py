"""Pure enrichment rules: the email provider from MX hosts, country and timezone from what a lead says.

Nothing here does network I/O. The country and timezone tables come from data files shipped inside installed
packages (`tzdata`'s `zone.tab`, `iso3166.tab` and `tzdata.zi`, `tldextract`'s public-suffix snapshot,
`phonenumbers`' metadata); they are read once, on first use.

See docs/enrichment.md for what is derived from what and in which order.
"""

from __future__ import annotations

import re
import unicodedata
import zoneinfo
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache
from importlib import resources

import phonenumbers
import tldextract
from phonenumbers import timezone as phone_timezones

from outreach_core.leads.schemas import CountrySource, Esp

__all__ = [
    "classify_esp",
    "consumer_esp",
    "country_from_domain",
    "country_from_phone",
    "country_from_timezone",
    "country_single_zone",
    "infer_country",
    "infer_timezone",
    "normalize_country",
    "normalize_timezone",
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


# --- country ----------------------------------------------------------------------------------------------


def _tzdata_text(name: str) -> str:
    return resources.files("tzdata").joinpath("zoneinfo", name).read_text(encoding="utf-8")


def _data_rows(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]


@cache
def _iso_names() -> dict[str, str]:
    """ISO 3166 alpha-2 code -> English name, from tzdata's `iso3166.tab`."""
    return {row[0]: row[1] for row in _data_rows(_tzdata_text("iso3166.tab"))}


# Common spellings that iso3166.tab does not use (its names are short: "Britain (UK)", "Korea (South)").
_COUNTRY_ALIASES: dict[str, str] = {
    "uk": "GB",
    "united kingdom": "GB",
    "great britain": "GB",
    "britain": "GB",
    "england": "GB",
    "scotland": "GB",
    "wales": "GB",
    "northern ireland": "GB",
    "usa": "US",
    "us": "US",
    "u s": "US",
    "u s a": "US",
    "america": "US",
    "united states of america": "US",
    "south korea": "KR",
    "korea": "KR",
    "republic of korea": "KR",
    "korea republic of": "KR",
    "north korea": "KP",
    "russian federation": "RU",
    "czechia": "CZ",
    "democratic republic of the congo": "CD",
    "dr congo": "CD",
    "drc": "CD",
    "republic of the congo": "CG",
    "congo": "CG",
    "ivory coast": "CI",
    "myanmar": "MM",
    "burma": "MM",
    "eswatini": "SZ",
    "swaziland": "SZ",
    "timor leste": "TL",
    "vatican": "VA",
    "holy see": "VA",
    "viet nam": "VN",
    "macao": "MO",
    "turkiye": "TR",
    "cabo verde": "CV",
    "holland": "NL",
    "deutschland": "DE",
    "uae": "AE",
    "macedonia": "MK",
    "american samoa": "AS",
    "samoa": "WS",
    "british virgin islands": "VG",
    "us virgin islands": "VI",
    "hongkong": "HK",
}


def _name_key(value: str) -> str:
    """Case, accents, punctuation, `&`/`and`, `Saint`/`St` and a leading "the" do not matter."""
    text = unicodedata.normalize("NFKD", value.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).replace("&", " and ")
    text = re.sub(r"[^a-z0-9]+", " ", text).strip()
    text = re.sub(r"^the ", "", text)
    return re.sub(r"\bsaint\b", "st", text)


@cache
def _country_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for code, name in _iso_names().items():
        names[_name_key(name)] = code
        base = re.sub(r"\s*\(.*\)\s*$", "", name)  # "Myanmar (Burma)" -> "Myanmar"
        if base != name:
            names.setdefault(_name_key(base), code)
    names.pop("korea", None)  # "Korea (North)" / "Korea (South)": the alias table decides
    names.pop("congo", None)
    names.pop("virgin islands", None)
    names.update({_name_key(k): v for k, v in _COUNTRY_ALIASES.items()})
    return names


def normalize_country(value: str | None) -> str | None:
    """An ISO 3166 alpha-2 code from a code or an English name (`de`, `DE`, `Germany`, `UK`, `USA`), or None
    when the value is empty or not recognised."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if len(text) == 2 and text.isalpha():
        code = text.upper()
        if code == "UK":
            return "GB"
        return code if code in _iso_names() else None
    return _country_names().get(_name_key(text))


@cache
def _zone_countries() -> dict[str, str]:
    """IANA zone -> the country `zone.tab` lists it under (each zone appears there once)."""
    return {row[2]: row[0] for row in _data_rows(_tzdata_text("zone.tab"))}


@cache
def _country_zones() -> dict[str, tuple[str, ...]]:
    """Country -> its zones in `zone.tab` order (most populous first)."""
    zones: dict[str, list[str]] = {}
    for row in _data_rows(_tzdata_text("zone.tab")):
        zones.setdefault(row[0], []).append(row[2])
    return {k: tuple(v) for k, v in zones.items()}


@cache
def _links() -> dict[str, str]:
    """Alias -> target for the backward-compatible names (`Asia/Calcutta` -> `Asia/Kolkata`)."""
    links: dict[str, str] = {}
    for line in _tzdata_text("tzdata.zi").splitlines():
        if line.startswith("L "):
            _, target, alias = line.split()
            links[alias] = target
    return links


# Rule-named zones that tzdata now links to one city (`CET` -> Europe/Brussels, `EST` -> America/Panama):
# someone who writes "CET" means Central European time, not Belgium.
_REGIONAL_ZONES = frozenset({"CET", "EET", "WET", "MET", "EST", "MST", "HST"})


def country_from_timezone(tz: str | None) -> str | None:
    """The country of an IANA zone (`Europe/Berlin` -> DE, `Asia/Calcutta` -> IN); None for zones that belong
    to no single country (`UTC`, `Etc/GMT-2`, `CET`) or unknown names."""
    if not tz or tz in _REGIONAL_ZONES:
        return None
    countries = _zone_countries()
    seen: set[str] = set()
    while tz not in countries:
        if tz in seen or tz not in _links():
            return None
        seen.add(tz)
        tz = _links()[tz]
    return countries[tz]


# --- timezone ---------------------------------------------------------------------------------------------


@cache
def _zone_names() -> dict[str, str]:
    """Lower-cased IANA name -> its proper spelling."""
    return {name.lower(): name for name in zoneinfo.available_timezones()}


@cache
def _valid_zones() -> frozenset[str]:
    return frozenset(_zone_names().values())


# Abbreviations people type into lead sheets, mapped to the location zone they usually mean (with DST).
_TZ_ALIASES: dict[str, str] = {
    "z": "UTC",
    "est": "America/New_York",
    "edt": "America/New_York",
    "et": "America/New_York",
    "eastern": "America/New_York",
    "cst": "America/Chicago",
    "cdt": "America/Chicago",
    "ct": "America/Chicago",
    "central": "America/Chicago",
    "mst": "America/Denver",
    "mdt": "America/Denver",
    "mt": "America/Denver",
    "mountain": "America/Denver",
    "pst": "America/Los_Angeles",
    "pdt": "America/Los_Angeles",
    "pt": "America/Los_Angeles",
    "pacific": "America/Los_Angeles",
    "akst": "America/Anchorage",
    "hst": "Pacific/Honolulu",
    "cest": "CET",
    "eest": "EET",
    "west": "WET",
    "bst": "Europe/London",
    "aest": "Australia/Sydney",
    "aedt": "Australia/Sydney",
    "jst": "Asia/Tokyo",
}
_OFFSET = re.compile(r"^(?:utc|gmt)?\s*([+-])\s*(\d{1,2})(?::?00)?$")


def normalize_timezone(value: str | None) -> str | None:
    """A valid IANA zone name for what a person typed, or None.

    Accepts IANA names in any case and with spaces for underscores (`europe/berlin`, `America/New York`),
    the common abbreviations in `_TZ_ALIASES` (`EST` -> `America/New_York`: people mean the local time with
    daylight saving, not the fixed-offset zone), and whole-hour offsets (`UTC+2`, `GMT-05:00` ->
    `Etc/GMT-2`, `Etc/GMT+5`; the `Etc` names invert the sign, by POSIX convention)."""
    if value is None:
        return None
    text = value.strip()
    if not text or len(text) > 64:
        return None
    key = re.sub(r"\s+", "_", text.lower())
    alias = _TZ_ALIASES.get(key)
    if alias is not None:
        return alias
    if key in _zone_names():
        return _zone_names()[key]
    offset = _OFFSET.match(text.lower().replace(" ", ""))
    if offset is not None:
        sign, hours = offset.group(1), int(offset.group(2))
        if hours == 0:
            return "UTC"
        if (sign == "+" and hours <= 14) or (sign == "-" and hours <= 12):
            return f"Etc/GMT{'-' if sign == '+' else '+'}{hours}"
    return None


# Instants at which two zones must agree to count as the same local time: noon UTC daily over three years
# (DST changes of different rules fall on different days, so daily sampling tells them apart).
_SAMPLE_START = datetime(2024, 1, 1, 12, tzinfo=UTC)
_SAMPLE_DAYS = 3 * 366


@lru_cache(maxsize=4096)
def _offsets(zone: str) -> tuple[timedelta | None, ...]:
    tz = zoneinfo.ZoneInfo(zone)
    return tuple((_SAMPLE_START + timedelta(days=d)).astimezone(tz).utcoffset() for d in range(_SAMPLE_DAYS))


def _one_local_time(zones: list[str], prefer_country: str | None) -> str | None:
    """The zone to use when every zone in `zones` keeps the same local time (Germany: Berlin and Busingen),
    else None. Prefers the first zone `zone.tab` lists for `prefer_country`."""
    if not zones:
        return None
    first = _offsets(zones[0])
    if any(_offsets(z) != first for z in zones[1:]):
        return None
    for zone in _country_zones().get(prefer_country or "", ()):
        if zone in zones:
            return zone
    return zones[0]


def country_single_zone(country: str | None) -> str | None:
    """The zone of a country whose zones all keep one local time (DE -> Europe/Berlin), else None (US, ES)."""
    if not country:
        return None
    zones = list(_country_zones().get(country, ()))
    return _one_local_time(zones, country)


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
    return region if region and region.isalpha() and region in _iso_names() else None


def _zone_from_phone(phone: str | None, country: str | None) -> str | None:
    number = _parse_phone(phone, country)
    if number is None:
        return None
    region = phonenumbers.region_code_for_number(number)
    if country is not None and region != country:
        return None  # a foreign number says nothing about where this lead is
    zones = [z for z in phone_timezones.time_zones_for_number(number) if z in _valid_zones()]
    return _one_local_time(zones, region)


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
    return code if code in _iso_names() else None


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
