"""Countries and time zones: what people type normalised to ISO 3166 codes and IANA zone names, and which
country a zone belongs to (used by leads, mailboxes and enrichment).

Pure: the tables come from data files shipped inside the `tzdata` package (`iso3166.tab`, `zone.tab`,
`tzdata.zi`), read once, on first use.
"""

from __future__ import annotations

import re
import unicodedata
import zoneinfo
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache
from importlib import resources

# --- country ----------------------------------------------------------------------------------------------


def _tzdata_text(name: str) -> str:
    return resources.files("tzdata").joinpath("zoneinfo", name).read_text(encoding="utf-8")


def _data_rows(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]


@cache
def iso_names() -> dict[str, str]:
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
    for code, name in iso_names().items():
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
        return code if code in iso_names() else None
    return _country_names().get(_name_key(text))


@cache
def zone_countries() -> dict[str, str]:
    """IANA zone -> the country `zone.tab` lists it under (each zone appears there once)."""
    return {row[2]: row[0] for row in _data_rows(_tzdata_text("zone.tab"))}


@cache
def country_zones() -> dict[str, tuple[str, ...]]:
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
    countries = zone_countries()
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
def valid_zones() -> frozenset[str]:
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


def one_local_time(zones: list[str], prefer_country: str | None) -> str | None:
    """The zone to use when every zone in `zones` keeps the same local time (Germany: Berlin and Busingen),
    else None. Prefers the first zone `zone.tab` lists for `prefer_country`."""
    if not zones:
        return None
    first = _offsets(zones[0])
    if any(_offsets(z) != first for z in zones[1:]):
        return None
    for zone in country_zones().get(prefer_country or "", ()):
        if zone in zones:
            return zone
    return zones[0]


def country_single_zone(country: str | None) -> str | None:
    """The zone of a country whose zones all keep one local time (DE -> Europe/Berlin), else None (US, ES)."""
    if not country:
        return None
    zones = list(country_zones().get(country, ()))
    return one_local_time(zones, country)
