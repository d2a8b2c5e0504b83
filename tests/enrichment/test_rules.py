"""Pure enrichment rules: ESP from MX hosts, country and timezone inference (no database, no network)."""

from __future__ import annotations

import zoneinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from outreach_core.enrichment import rules
from outreach_core.enrichment.rules import (
    country_from_domain,
    country_from_phone,
    infer_country,
    infer_timezone,
)
from outreach_core.kernel.geo import (
    country_from_timezone,
    country_zones,
    iso_names,
    normalize_country,
    normalize_timezone,
    zone_countries,
)
from outreach_core.targets.esp import classify_esp, consumer_esp, parse_mx
from outreach_core.targets.mail_domains import DomainInfo

# --- email provider -------------------------------------------------------------------------------------

PROVIDER_HOSTS = [
    ("aspmx.l.google.com", "google"),
    ("alt1.aspmx.l.google.com.", "google"),
    ("ASPMX2.GOOGLEMAIL.COM.", "google"),
    ("smtp.google.com", "google"),
    ("acme-io.mail.protection.outlook.com.", "microsoft"),
    ("hotmail-com.olc.protection.outlook.com", "microsoft"),
    ("mx1.hotmail.com", "microsoft"),
    ("mta5.am0.yahoodns.net.", "yahoo"),
    ("mail.protonmail.ch.", "proton"),
    ("mailsec.protonmail.ch", "proton"),
    ("mx01.mail.icloud.com.", "icloud"),
    ("mx02.mail.me.com", "icloud"),
    ("mx.zoho.com", "zoho"),
    ("mx2.zoho.eu.", "zoho"),
    ("mx.zohomail.com", "zoho"),
]


@pytest.mark.parametrize(("host", "esp"), PROVIDER_HOSTS)
def test_each_provider_is_recognised_from_its_mx_host(host: str, esp: str) -> None:
    assert classify_esp([host]) == esp


@pytest.mark.parametrize(
    "host",
    ["mx.example.net", "notgoogle.com", "google.com.evil.net", "us-smtp-inbound-1.mimecast.com", "me.com.au"],
)
def test_unknown_hosts_are_other(host: str) -> None:
    assert classify_esp([host]) == "other"


def test_no_host_is_unknown() -> None:
    assert classify_esp([]) == "unknown"
    assert classify_esp(["."]) == "unknown"


@given(
    provider=st.sampled_from(PROVIDER_HOSTS),
    others=st.lists(st.sampled_from(["mx.example.net", "backup.example.org", "aspmx.l.google.com"])),
)
def test_the_most_preferred_host_decides(provider: tuple[str, str], others: list[str]) -> None:
    host, esp = provider
    assert classify_esp([host, *others]) == esp
    assert classify_esp(["mx.example.net", host]) == "other"


def test_parse_mx_orders_by_preference_and_drops_null_mx() -> None:
    answers = ["20 alt1.aspmx.l.google.com.", "10 ASPMX.L.GOOGLE.COM.", "10 a.example.com.", "junk"]
    assert parse_mx(answers) == ["a.example.com", "aspmx.l.google.com", "alt1.aspmx.l.google.com"]
    assert parse_mx(["0 ."]) == []
    assert DomainInfo.from_answers(["0 ."]) == DomainInfo("unknown", None, has_mx=False)
    assert DomainInfo.from_answers(["5 mx.zoho.eu."]) == DomainInfo("zoho", "mx.zoho.eu", has_mx=True)


@pytest.mark.parametrize(
    ("domain", "esp"),
    [
        ("gmail.com", "google"),
        ("googlemail.com", "google"),
        ("outlook.com", "microsoft"),
        ("hotmail.com", "microsoft"),
        ("hotmail.co.uk", "microsoft"),
        ("live.com", "microsoft"),
        ("outlook.de", "microsoft"),
        ("yahoo.com", "yahoo"),
        ("yahoo.co.uk", "yahoo"),
        ("yahoo.fr", "yahoo"),
        ("yahoo.com.br", "yahoo"),
        ("proton.me", "proton"),
        ("protonmail.com", "proton"),
        ("icloud.com", "icloud"),
        ("me.com", "icloud"),
        ("mac.com", "icloud"),
        ("zoho.com", "zoho"),
        ("GMAIL.COM.", "google"),
    ],
)
def test_consumer_domains_are_known_without_dns(domain: str, esp: str) -> None:
    assert consumer_esp(domain) == esp


@pytest.mark.parametrize("domain", ["acme.io", "gmail.co", "yahoo.example.com", "mygmail.com", "live.app"])
def test_other_domains_are_not_consumer_domains(domain: str) -> None:
    assert consumer_esp(domain) is None


# --- country ----------------------------------------------------------------------------------------------

ISO_CODES = sorted(iso_names())


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("DE", "DE"),
        ("de", "DE"),
        (" Germany ", "DE"),
        ("germany", "DE"),
        ("UK", "GB"),
        ("uk", "GB"),
        ("United Kingdom", "GB"),
        ("England", "GB"),
        ("USA", "US"),
        ("U.S.A.", "US"),
        ("United States", "US"),
        ("United States of America", "US"),
        ("South Korea", "KR"),
        ("Korea (South)", "KR"),
        ("C\u00f4te d\u2019Ivoire", "CI"),
        ("Cote d'Ivoire", "CI"),
        ("Bosnia and Herzegovina", "BA"),
        ("Saint Lucia", "LC"),
        ("The Netherlands", "NL"),
        ("Czechia", "CZ"),
        ("Myanmar", "MM"),
    ],
)
def test_country_names_and_codes_normalise(value: str, code: str) -> None:
    assert normalize_country(value) == code


@pytest.mark.parametrize("value", [None, "", "  ", "XX", "Narnia", "EU", "D"])
def test_unknown_countries_give_none(value: str | None) -> None:
    assert normalize_country(value) is None


@pytest.mark.parametrize("code", ISO_CODES)
def test_every_iso_code_and_its_tzdata_name_normalise(code: str) -> None:
    assert normalize_country(code.lower()) == code
    assert normalize_country(iso_names()[code]) == code


@pytest.mark.parametrize(("zone", "code"), sorted(zone_countries().items()))
def test_every_zone_tab_zone_gives_its_country(zone: str, code: str) -> None:
    assert country_from_timezone(zone) == code
    assert infer_country(
        timezone=zone, phone=None, email_domain=None, website=None, explicit_country=None
    ) == (code, "timezone")


@pytest.mark.parametrize(
    ("zone", "code"),
    [
        ("Asia/Calcutta", "IN"),  # backward link
        ("US/Eastern", "US"),
        ("Europe/Kiev", "UA"),
        ("UTC", None),
        ("Etc/GMT-2", None),
        ("CET", None),  # tzdata links it to Brussels; a person writing CET means Central Europe
        ("EST", None),
        ("Mars/Olympus", None),
        (None, None),
    ],
)
def test_links_and_zones_without_a_country(zone: str | None, code: str | None) -> None:
    assert country_from_timezone(zone) == code


@pytest.mark.parametrize(
    ("phone", "code"),
    [
        ("+49 30 901820", "DE"),
        ("+33 6 12 34 56 78", "FR"),
        ("0033612345678", "FR"),
        ("+44 20 7946 0958", "GB"),
        ("+1 212 555 0123", "US"),
        ("+1 416 555 0123", "CA"),
        ("+61 2 9876 5432", "AU"),
        ("030 901820", None),  # national format: no country to read it in
        ("+49 1", None),  # not a valid number
        ("call me", None),
        ("", None),
        (None, None),
    ],
)
def test_country_from_phone(phone: str | None, code: str | None) -> None:
    assert country_from_phone(phone) == code


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("acme.de", "DE"),
        ("ACME.DE.", "DE"),
        ("acme.co.uk", "GB"),
        ("acme.ac.uk", "GB"),
        ("acme.com.au", "AU"),
        ("acme.com.co", "CO"),  # a national registration under a vanity ccTLD
        ("https://www.acme.fr/about?x=1", "FR"),
        ("www.acme.ch", "CH"),
        ("acme.com", None),
        ("acme.io", None),
        ("acme.co", None),
        ("acme.ai", None),
        ("acme.tv", None),
        ("acme.eu", None),
        ("acme.xyz", None),
        ("localhost", None),
        ("", None),
        (None, None),
    ],
)
def test_country_from_domain(value: str | None, code: str | None) -> None:
    assert country_from_domain(value) == code


def _cctld_countries() -> list[str]:
    out = []
    for code in ISO_CODES:
        tld = code.lower()
        if tld in rules._VANITY_CCTLDS or rules._extractor()(f"acme.{tld}").suffix != tld:
            continue
        out.append(code)
    return out


LABELS = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True)


@given(code=st.sampled_from(_cctld_countries()), label=LABELS)
def test_every_country_code_domain_gives_its_country(code: str, label: str) -> None:
    assert country_from_domain(f"{label}.{code.lower()}") == code


# Facts with the country each one implies, for the priority property below.
TIMEZONES = [("Europe/Berlin", "DE"), ("America/Chicago", "US"), ("Asia/Tokyo", "JP"), ("europe/paris", "FR")]
PHONES = [("+33 6 12 34 56 78", "FR"), ("+44 20 7946 0958", "GB"), ("+81 3 1234 5678", "JP")]
EMAIL_DOMAINS = [("acme.de", "DE"), ("acme.co.uk", "GB"), ("acme.com.br", "BR")]
WEBSITES = [("https://acme.it", "IT"), ("www.acme.se", "SE"), ("acme.nl/contact", "NL")]
NOTHING = [None, "", "acme.com"]  # absent, empty, or a value that implies no country


def _fact(known: list[tuple[str, str]]) -> st.SearchStrategy[tuple[str | None, str | None]]:
    return st.one_of(st.sampled_from(known), st.sampled_from(NOTHING).map(lambda v: (v, None)))


@given(tz=_fact(TIMEZONES), phone=_fact(PHONES), email=_fact(EMAIL_DOMAINS), site=_fact(WEBSITES))
def test_the_first_source_that_gives_a_country_wins(
    tz: tuple[str | None, str | None],
    phone: tuple[str | None, str | None],
    email: tuple[str | None, str | None],
    site: tuple[str | None, str | None],
) -> None:
    sources = [("timezone", tz), ("phone", phone), ("email", email), ("website", site)]
    expected = next(((code, name) for name, (_, code) in sources if code is not None), (None, None))
    got = infer_country(
        timezone=tz[0], phone=phone[0], email_domain=email[0], website=site[0], explicit_country=None
    )
    assert got == expected


@given(
    code=st.sampled_from(ISO_CODES),
    upper=st.booleans(),
    tz=_fact(TIMEZONES),
    phone=_fact(PHONES),
    email=_fact(EMAIL_DOMAINS),
)
def test_a_given_country_always_wins_and_has_no_source(
    code: str,
    upper: bool,
    tz: tuple[str | None, str | None],
    phone: tuple[str | None, str | None],
    email: tuple[str | None, str | None],
) -> None:
    given_country = code if upper else code.lower()
    got = infer_country(
        timezone=tz[0], phone=phone[0], email_domain=email[0], website=None, explicit_country=given_country
    )
    assert got == (code, None)


def test_an_unrecognised_given_country_falls_back_to_inference() -> None:
    got = infer_country(
        timezone=None, phone=None, email_domain="acme.de", website=None, explicit_country="Narnia"
    )
    assert got == ("DE", "email")


# --- timezone ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "zone"),
    [
        ("Europe/Berlin", "Europe/Berlin"),
        ("europe/berlin", "Europe/Berlin"),
        (" America/New York ", "America/New_York"),
        ("Asia/Calcutta", "Asia/Calcutta"),
        ("UTC", "UTC"),
        ("utc", "UTC"),
        ("Z", "UTC"),
        ("EST", "America/New_York"),
        ("pst", "America/Los_Angeles"),
        ("CET", "CET"),
        ("CEST", "CET"),
        ("UTC+2", "Etc/GMT-2"),
        ("GMT-05:00", "Etc/GMT+5"),
        ("+01:00", "Etc/GMT-1"),
        ("UTC+0", "UTC"),
        ("UTC+5:30", None),  # half-hour offsets have no Etc zone
        ("UTC+15", None),
        ("Mars/Olympus", None),
        ("", None),
        (None, None),
    ],
)
def test_normalize_timezone(value: str | None, zone: str | None) -> None:
    assert normalize_timezone(value) == zone


@given(zone=st.sampled_from(sorted(zoneinfo.available_timezones())), upper=st.booleans())
def test_normalized_timezones_are_valid_and_stable(zone: str, upper: bool) -> None:
    normalized = normalize_timezone(zone.upper() if upper else zone.lower())
    assert normalized is not None
    zoneinfo.ZoneInfo(normalized)  # loads
    assert normalize_timezone(normalized) == normalized


@pytest.mark.parametrize(
    ("country", "phone", "zone"),
    [
        ("DE", None, "Europe/Berlin"),  # Berlin and Busingen keep the same local time
        ("de", None, "Europe/Berlin"),
        ("Germany", None, "Europe/Berlin"),
        ("FR", None, "Europe/Paris"),
        ("GB", None, "Europe/London"),
        ("JP", None, "Asia/Tokyo"),
        ("US", None, None),  # several local times
        ("ES", None, None),  # the Canary Islands
        ("AU", None, None),
        ("US", "+1 212 555 0123", "America/New_York"),  # the area code decides
        (None, "+1 312 555 0123", "America/Chicago"),
        (None, "+33 6 12 34 56 78", "Europe/Paris"),
        ("US", "+33 6 12 34 56 78", None),  # a foreign number says nothing about this lead
        ("FR", "06 12 34 56 78", "Europe/Paris"),  # national format read in the lead's country
        (None, "+1 800 555 0123", None),  # toll-free: no area
        (None, None, None),
        ("XX", None, None),
    ],
)
def test_infer_timezone(country: str | None, phone: str | None, zone: str | None) -> None:
    assert infer_timezone(country, phone) == zone


@given(code=st.sampled_from(sorted(country_zones())))
def test_an_inferred_zone_belongs_to_the_country(code: str) -> None:
    zone = infer_timezone(code, None)
    zones = country_zones()[code]
    if len(zones) == 1:
        assert zone == zones[0]
    if zone is not None:
        assert zone in zones
        assert country_from_timezone(zone) == code
