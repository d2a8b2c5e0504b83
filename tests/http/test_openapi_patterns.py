"""The patterns the OpenAPI document states are promises: every value matching one is accepted by the
server's own check (dates exactly: the pattern and the check agree both ways). Values are drawn from the
patterns as a fuzzer or a generated client's user would write them (hypothesis `from_regex`, seeded)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from http_api.app import api_endpoints
from http_api.openapi import build_openapi
from outreach_core.campaigns.schemas import UpdateCampaignIn
from outreach_core.kernel.geo import normalize_country, normalize_timezone, valid_zones
from outreach_core.kernel.wire import DATE_PATTERN, NAMED_PATTERNS
from outreach_core.leads.schemas import LEAD_EMAIL
from outreach_core.targets.rules import normalize_email
from outreach_core.webhooks.rules import webhook_url_problem

SEEDED = settings(
    max_examples=300, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return build_openapi(api_endpoints(), server_url="https://outreach.example.com", public={"ping"})


def _schema(doc: dict[str, Any], model: str, field: str) -> dict[str, Any]:
    prop: dict[str, Any] = doc["components"]["schemas"][model]["properties"][field]
    return next((b for b in prop.get("anyOf", []) if b.get("type") == "string"), prop)


def test_the_date_pattern_is_exactly_the_calendar() -> None:
    pattern = re.compile(DATE_PATTERN)
    for year in (1, 4, 99, 100, 400, 1900, 1999, 2000, 2024, 2025, 2100, 2400, 9999):
        for month in range(0, 14):
            for day in range(0, 33):
                text = f"{year:04d}-{month:02d}-{day:02d}"
                try:
                    dt.date.fromisoformat(text)
                    valid = True
                except ValueError:
                    valid = False
                assert bool(pattern.fullmatch(text)) is valid, text
    fullwidth = "\uff12\uff10\uff12\uff16-01-01"  # digits Python's fromisoformat would read
    for text in ("0000-01-01", "2026-W48-3", "20260101", "2026-1-01", fullwidth, "2026-01-01 "):
        assert pattern.fullmatch(text) is None, text
        with pytest.raises(ValueError):  # the model refuses it too
            UpdateCampaignIn.model_validate({"startOn": text})


def test_every_named_pattern_is_stated_in_the_document(doc: dict[str, Any]) -> None:
    text = str(doc)
    assert "iana-time-zone" not in text and "iso-country-code" not in text and "public-https-url" not in text
    assert set(NAMED_PATTERNS) >= {"iana-time-zone", "iso-country-code", "public-https-url"}


def test_every_stated_time_zone_is_taken(doc: dict[str, Any]) -> None:
    for model, field in (("UpdateCampaignIn", "timezoneFallback"), ("UpdateMailboxIn", "timezone")):
        pattern = re.compile(_schema(doc, model, field)["pattern"])
        named = [z for z in sorted(valid_zones()) if pattern.fullmatch(z)]
        assert named == sorted(valid_zones())
        assert all(normalize_timezone(z) is not None for z in named)  # mailboxes ("EST": New York)
        assert pattern.fullmatch("Mars/Olympus") is None and pattern.fullmatch("europe/berlin") is None
        for zone in named:
            UpdateCampaignIn.model_validate({"timezoneFallback": zone})


def test_every_stated_country_is_taken(doc: dict[str, Any]) -> None:
    for model in ("CreateLeadIn", "UpdateLeadIn"):
        pattern = re.compile(_schema(doc, model, "country")["pattern"])
        for code in ("DE", "GB", "US", "CI", "AX"):
            assert pattern.fullmatch(code) and normalize_country(code) == code
        assert pattern.fullmatch("XX") is None and pattern.fullmatch("Germany") is None


@SEEDED
@given(st.from_regex(LEAD_EMAIL.pattern, fullmatch=True))
def test_every_stated_lead_email_is_taken(address: str) -> None:
    if all(re.search(p, address) for p in LEAD_EMAIL.also) and len(address) <= 320:
        assert normalize_email(address) is not None, address


def test_the_lead_email_pattern_states_the_limits() -> None:
    def stated(text: str) -> bool:
        return all(re.search(p, text) for p in (LEAD_EMAIL.pattern, *LEAD_EMAIL.also))

    for text in ("ada@example.com", " MAILTO:Ada.Lovelace+x@Mail.Example.CO.UK\t", "a" * 64 + "@x.io"):
        assert stated(text) and normalize_email(text) is not None, text
    for text in ("a" * 65 + "@x.io", "a@" + "b" * 64 + ".io", ".a@x.io", "a..b@x.io", "a@x", "a@-x.io"):
        assert not stated(text) and normalize_email(text) is None, text
    long = "a" * 64 + "@" + "b" * 62 + "." + "b" * 61 + "." + "b" * 61 + ".io"  # 254 characters
    assert stated(long) and normalize_email(long) is not None
    assert not stated(long + "x") and normalize_email(long + "x") is None


STATED_URLS = st.from_regex(NAMED_PATTERNS["public-https-url"](), fullmatch=True)


@SEEDED
@given(STATED_URLS.filter(lambda u: len(u) <= 2000))
def test_every_stated_webhook_url_is_taken(url: str) -> None:
    assert webhook_url_problem(url, allow_private=False) is None, url
