"""The pure parsers and grading rules of the domain checker, on records as DNS servers hand them out."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from outreach_core.deliverability.facts import Answer, Facts
from outreach_core.deliverability.grading import grade
from outreach_core.deliverability.records import parse_dkim, parse_dmarc, parse_spf, txt_text
from outreach_core.deliverability.rules import normalize_domain, normalize_selector


def test_txt_strings_are_joined_and_unescaped() -> None:
    assert txt_text('"v=spf1 include:_spf.google.com " "~all"') == "v=spf1 include:_spf.google.com ~all"
    assert txt_text(r'"a\"b\\c\059d"') == 'a"b\\c;d'


def test_spf_terms_modifiers_and_errors() -> None:
    record = parse_spf(
        "v=spf1 ip4:192.0.2.0/24 a/24 -mx:mail.example.com include:x.example redirect=y.example"
    )
    assert record.includes == ["x.example"] and record.redirect == "y.example"
    assert [t.name for t in record.terms if not t.modifier] == ["ip4", "a", "mx", "include"]
    assert record.all_qualifier is None
    broken = parse_spf("v=spf1 include: foo:bar redirect=a redirect=b ~all")
    assert broken.errors == [
        "include needs a value ('include:')",
        "unknown mechanism 'foo:bar'",
        "the redirect= modifier appears more than once",
    ]
    assert broken.all_qualifier == "~"


def test_dmarc_tags_and_errors() -> None:
    record = parse_dmarc("v=DMARC1; p=Reject; pct=50; rua=mailto:a@x.example,mailto:b@x.example; adkim=s")
    assert (record.policy, record.pct, record.rua, record.errors) == (
        "reject",
        50,
        ["mailto:a@x.example", "mailto:b@x.example"],
        [],
    )
    assert parse_dmarc("v=DMARC1; pct=200; rua=https://x").errors == [
        "the p= tag (policy) is missing",
        "pct=200 is not a number from 0 to 100",
        "rua 'https://x' is not a mailto: address",
    ]


def test_dkim_keys() -> None:
    assert parse_dkim("v=DKIM1; k=rsa; p=") is not None and parse_dkim("v=DKIM1; p=").revoked  # type: ignore[union-attr]
    assert parse_dkim("some verification text") is None
    assert parse_dkim("v=DKIM1; k=dsa; p=AAAA").error == "k=dsa is not a known key type (rsa or ed25519)"  # type: ignore[union-attr]
    assert parse_dkim("v=DKIM1; k=ed25519; p=AAAA").error == "an ed25519 key is 32 bytes, this one is 3"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("typed", "domain"),
    [
        ("Example.COM", "example.com"),
        ("https://www.example.co.uk:8443/path", "example.co.uk"),
        ("www.example.com", "www.example.com"),  # typed as a name, www is kept
        ("ann@mail.example.com", "mail.example.com"),
        (
            "\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25\uff0e\uff43\uff4f\uff4d",
            "example.com",
        ),  # full-width, mapped as browsers do
        ("münchen.de", "xn--mnchen-3ya.de"),
    ],
)
def test_what_people_type_becomes_the_domain(typed: str, domain: str) -> None:
    assert normalize_domain(typed) == domain


@pytest.mark.parametrize("typed", ["co.uk", "com.", "localhost", "192.0.2.1", "http://[::1]/", "a..b.com"])
def test_what_is_not_a_domain_one_can_own_is_refused(typed: str) -> None:
    with pytest.raises(ValueError):
        normalize_domain(typed)


def test_selectors() -> None:
    assert normalize_selector("S1.Sub") == "s1.sub"
    for bad in ("a b", "-x", "x..y", "x" * 64):
        with pytest.raises(ValueError):
            normalize_selector(bad)


def test_nothing_answered_is_never_a_wrong_fail() -> None:
    down = Answer(error="no answer within 2 s")
    facts = Facts(domain="example.com", selector=None, presence=[down, down, down], mx=down, dmarc=down)
    facts.spf = {"example.com": down}
    facts.dkim = {"google": down}
    graded = grade(facts, datetime.now(UTC), allow_private=False)
    assert graded.exists is True
    assert {c.id: c.status for c in graded.checks} == {
        "exists": "info",
        "mx": "info",
        "spf": "info",
        "dkim": "info",
        "dmarc": "info",
        "blacklists": "info",
        "domain_age": "info",
    }
    assert (graded.score, graded.grade) == (0, "F") and "could not be checked" in graded.verdict
