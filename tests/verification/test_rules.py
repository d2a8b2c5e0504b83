"""Pure verification rules: local checks, the verifier API's answers, retries and claim markers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from outreach_core.verification import rules
from outreach_core.verification.rules import ApiFailure, MailServer, Retry, Verdict

MX = MailServer(has_mx=True, lookup_failed=False)
NO_MX = MailServer(has_mx=False, lookup_failed=False)
FAILED = MailServer(has_mx=False, lookup_failed=True)
NOW = datetime(2026, 11, 21, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "local",
    ["info", "sales", "no-reply", "no_reply", "noreply", "Support", "sales+emea", "h.r", "postmaster"],
)
def test_role_accounts(local: str) -> None:
    assert rules.is_role_account(local)


@pytest.mark.parametrize("local", ["jane", "john.smith", "info.jane", "salesforce-admin", "j"])
def test_people_are_not_role_accounts(local: str) -> None:
    assert not rules.is_role_account(local)


def test_disposable_domains_and_their_subdomains() -> None:
    assert rules.is_disposable("mailinator.com")
    assert rules.is_disposable("eu.mailinator.com")
    assert not rules.is_disposable("example.com")
    assert not rules.is_disposable("com")


def test_precheck_order() -> None:
    assert rules.precheck("not an address") == (None, Verdict("invalid", "syntax"))
    assert rules.precheck("a@@b.com") == (None, Verdict("invalid", "syntax"))
    assert rules.precheck("jane@mailinator.com") == (None, Verdict("invalid", "disposable domain"))
    assert rules.precheck("Jane@Acme.io") == ("acme.io", None)


def test_local_verdicts() -> None:
    assert rules.local_verdict("jane@acme.io", MX) == Verdict("valid", "local checks only")
    assert rules.local_verdict("info@acme.io", MX) == Verdict("risky", "role account")
    assert rules.local_verdict("jane@acme.io", NO_MX) == Verdict("invalid", "no mail server")
    assert rules.local_verdict("info@acme.io", NO_MX) == Verdict("invalid", "no mail server")
    assert rules.local_verdict("jane@acme.io", FAILED) == Verdict("unknown", "mail server lookup failed")


@pytest.mark.parametrize("status", ["valid", "invalid", "risky", "catch_all", "unknown", "CATCH_ALL"])
def test_api_answers(status: str) -> None:
    body = b'{"status": "%s", "reason": "mailbox\\nfull"}' % status.encode()
    assert rules.parse_api_answer(200, body) == Verdict(status.lower(), "mailbox full")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "body", "what"),
    [
        (500, b'{"status": "valid"}', "HTTP 500"),
        (302, b"", "HTTP 302"),
        (0, b"timed out", "no answer: timed out"),
        (0, b"", "no answer"),
        (200, b"<html>", "malformed answer"),
        (200, b"[]", "malformed answer"),
        (200, b'{"status": "deliverable"}', "malformed answer"),
        (200, b'{"status": 1}', "malformed answer"),
        (200, b"\xff\xfe", "malformed answer"),
    ],
)
def test_api_failures(status: int, body: bytes, what: str) -> None:
    assert rules.parse_api_answer(status, body) == ApiFailure(what)


def test_api_reasons_are_cleaned_and_never_look_like_markers() -> None:
    long = "x" * 500
    parsed = rules.parse_api_answer(200, b'{"status": "invalid", "reason": "%s"}' % long.encode())
    assert isinstance(parsed, Verdict) and parsed.reason is not None and len(parsed.reason) <= 120
    fake = rules.claim_marker(NOW + timedelta(days=999), 1)
    parsed = rules.parse_api_answer(200, b'{"status": "invalid", "reason": "%s"}' % fake.encode())
    assert isinstance(parsed, Verdict) and parsed.reason is not None
    assert not parsed.reason.startswith(rules.MARKER_PREFIX)


def test_the_api_decides_but_cannot_clear_a_role_account() -> None:
    role, person = Verdict("risky", "role account"), Verdict("valid", "local checks only")
    assert rules.combine(person, Verdict("catch_all", None)) == Verdict("catch_all", None)
    assert rules.combine(role, Verdict("valid", None)) == role
    assert rules.combine(role, Verdict("invalid", "no such mailbox")) == Verdict("invalid", "no such mailbox")
    assert (
        rules.combine(Verdict("unknown", "mail server lookup failed"), Verdict("valid", None)).status
        == "valid"
    )


def test_decide_retries_then_falls_back_to_the_local_verdict() -> None:
    local = Verdict("valid", "local checks only")
    failure = ApiFailure("HTTP 503")
    first = rules.decide(local, failure, 1, NOW)
    assert isinstance(first, Retry)
    assert first.reason == (
        "checking; next try after 2026-11-21T15:01:00.000000Z (attempt 1 failed: verifier API: HTTP 503)"
    )
    assert rules.previous_attempts(first.reason) == 1
    waits = [rules.decide(local, failure, n, NOW) for n in (2, 3)]
    assert [w.reason[25:52] for w in waits if isinstance(w, Retry)] == [
        "2026-11-21T15:05:00.000000Z",
        "2026-11-21T15:30:00.000000Z",
    ]
    assert rules.decide(local, failure, 4, NOW) == Verdict(
        "valid", "local checks only; verifier API failed (HTTP 503)"
    )
    assert rules.decide(local, None, 1, NOW) == local
    assert rules.decide(local, Verdict("invalid", None), 4, NOW) == Verdict("invalid", None)


def test_decide_retries_failed_lookups_without_an_api() -> None:
    lookup = Verdict("unknown", "mail server lookup failed")
    assert isinstance(rules.decide(lookup, None, 1, NOW), Retry)
    assert rules.decide(lookup, None, 4, NOW) == lookup
    both = rules.decide(lookup, ApiFailure("no answer"), 4, NOW)
    assert both == Verdict("unknown", "mail server lookup failed; verifier API failed (no answer)")


def test_claim_markers() -> None:
    marker = rules.claim_marker(NOW, 3)
    assert marker == "checking; next try after 2026-11-21T15:00:00.000000Z (attempt 3)"
    assert rules.previous_attempts(marker) == 3
    assert rules.previous_attempts(None) == 0
    assert rules.previous_attempts("role account") == 0
    assert rules.retry_delay(4) is None and rules.retry_delay(0) is None


@given(
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)),
    st.integers(1, 99),
)
def test_markers_sort_as_their_times(a: datetime, b: datetime, attempt: int) -> None:
    """The worker's "is it due" test is a string comparison: it must agree with time order."""
    marker = rules.claim_marker(a, attempt)
    assert (marker < rules.due_bound(b)) == (a < b)


def test_verifier_enabled() -> None:
    assert rules.verifier_enabled("https://verify.example/v1")
    assert not rules.verifier_enabled(None) and not rules.verifier_enabled("  ")
