"""The pure rules: host names accepted, the link target, and the state each check leads to."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import outreach_core.link_domain.schemas  # noqa: F401  (registers the link domain's named patterns)
from outreach_core.kernel.wire import NAMED_PATTERNS
from outreach_core.link_domain.rules import (
    Dns,
    Tls,
    checked_domain,
    decide,
    link_hostname,
    link_target,
    suggested_hostname,
)

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # the rules take the time as an argument; no clock is read


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("links.example.com", "links.example.com"),
        ("LINKS.Example.COM.", "links.example.com"),
        ("go.mail.example.co.uk", "go.mail.example.co.uk"),
        ("links.bücher.de", "links.xn--bcher-kva.de"),
        ("links.someone.github.io", "links.someone.github.io"),
    ],
)
def test_host_names_accepted(given: str, stored: str) -> None:
    assert link_hostname(given) == stored


@pytest.mark.parametrize(
    "given",
    [
        "",
        "example.com",
        "co.uk",
        "github.io",
        "someone.github.io",
        "10.1.2.3",
        "::1",
        "links.localhost",
        "links.internal",
        "links.arpa",
        "a..example.com",
        f"{'a' * 64}.example.com",
        "links.xn--zz.com!",
    ],
)
def test_host_names_refused(given: str) -> None:
    with pytest.raises(ValueError):
        link_hostname(given)


def test_checked_domains_and_suggestions() -> None:
    assert checked_domain("Ann@Example.com") == "example.com"
    assert checked_domain("https://www.example.com/x?y") == "www.example.com"
    assert suggested_hostname("example.com") == "links.example.com"
    assert suggested_hostname("co.uk") is None
    with pytest.raises(ValueError):
        checked_domain("https://127.0.0.1/")


def test_the_link_target() -> None:
    assert link_target("Edge.Example.net.", "http://127.0.0.1:8000") == "edge.example.net"
    assert link_target(None, "https://app.example.com") == "app.example.com"
    assert link_target(None, "http://127.0.0.1:8000") is None
    assert link_target(None, "http://localhost:8000") is None


def _decide(previous: str, dns: Dns, tls: Tls, *, age: dt.timedelta = dt.timedelta(0), tls_was: str = "none"):  # type: ignore[no-untyped-def]
    return decide(
        previous=previous,  # type: ignore[arg-type]
        previous_tls=tls_was,  # type: ignore[arg-type]
        verified_at=NOW - dt.timedelta(days=3) if previous == "active" else None,
        dns=dns,
        tls=tls,
        since=NOW - age,
        now=NOW,
    )


def test_states() -> None:
    ok, missing, unknown = Dns("ok"), Dns("missing", "no CNAME"), Dns("unknown", "timeout")
    verified, refused, silent = Tls("verified"), Tls("certificate", "expired"), Tls("unreachable", "x")
    assert _decide("none", missing, Tls("untested")).status == "pending_dns"
    assert (
        _decide("pending_dns", missing, Tls("untested"), age=dt.timedelta(hours=23)).status == "pending_dns"
    )
    assert _decide("pending_dns", missing, Tls("untested"), age=dt.timedelta(days=1)).status == "failed"
    assert (
        _decide("pending_dns", Dns("wrong", "x"), Tls("untested"), age=dt.timedelta(days=2)).status
        == "failed"
    )
    assert _decide("pending_dns", ok, silent).tls == "pending"
    assert (_decide("pending_tls", ok, refused).status, _decide("pending_tls", ok, refused).tls) == (
        "pending_tls",
        "failed",
    )
    became = _decide("pending_tls", ok, verified)
    assert (became.status, became.verified_at, became.next_check_at) == (
        "active",
        NOW,
        NOW + dt.timedelta(hours=1),
    )
    kept = _decide("active", ok, verified)
    assert kept.verified_at == NOW - dt.timedelta(days=3)  # when it became active, not each check
    assert _decide("active", ok, silent).status == "active"  # a proxy restart does not move links
    assert _decide("active", unknown, Tls("untested"), tls_was="active").status == "active"
    assert _decide("failed", unknown, Tls("untested")).status == "failed"
    dropped = _decide("active", missing, Tls("untested"), age=dt.timedelta(days=30))
    assert (dropped.status, dropped.since) == ("pending_dns", NOW)  # a new day begins
    assert _decide("active", ok, refused).status == "pending_tls"
    assert _decide("failed", missing, Tls("untested"), age=dt.timedelta(days=2)).next_check_at is None


SEEDED = settings(
    max_examples=200, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


@SEEDED
@given(st.from_regex(NAMED_PATTERNS["link-hostname"](), fullmatch=True).filter(lambda h: len(h) <= 253))
def test_every_stated_link_hostname_is_taken(hostname: str) -> None:
    """The pattern the OpenAPI document states for `hostname` is a promise: what matches it is accepted."""
    assert link_hostname(hostname) == hostname


@SEEDED
@given(st.from_regex(NAMED_PATTERNS["link-check-domain"](), fullmatch=True))
def test_every_stated_checked_domain_is_taken(domain: str) -> None:
    assert checked_domain(domain) == domain
