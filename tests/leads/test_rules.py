"""Address normalisation: property-based checks (hypothesis) plus hand-written cases."""

from __future__ import annotations

import email_validator
import pytest
from hypothesis import given
from hypothesis import strategies as st

from outreach_core.targets.rules import normalize_domain, normalize_email, search_text, sort_name

LOCAL_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+/=?^_`{|}~-"
atom = st.text(alphabet=LOCAL_CHARS, min_size=1, max_size=12)
label = st.from_regex(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,10}[a-zA-Z0-9])?", fullmatch=True)
tld = st.from_regex(r"[a-zA-Z]{2,8}", fullmatch=True)


@st.composite
def addresses(draw: st.DrawFn) -> str:
    local = ".".join(draw(st.lists(atom, min_size=1, max_size=3)))
    domain = ".".join([*draw(st.lists(label, min_size=1, max_size=3)), draw(tld)])
    return f"{local}@{domain}"


@given(addresses(), st.sampled_from(["", " ", "\t", "  \n"]), st.booleans())
def test_well_formed_addresses_normalise_to_one_spelling(address: str, pad: str, upper: bool) -> None:
    result = normalize_email(pad + (address.upper() if upper else address) + pad)
    assert result is not None
    email, domain = result
    assert email == address.lower()
    assert domain == address.lower().split("@", 1)[1]
    assert normalize_email(email) == result  # idempotent


@given(addresses())
def test_mailto_prefix_is_ignored(address: str) -> None:
    assert normalize_email("mailto:" + address) == normalize_email(address)


@given(st.text(max_size=80))
def test_accepted_values_are_canonical(value: str) -> None:
    result = normalize_email(value)
    if result is None:
        return
    email, domain = result
    assert email == email.lower().strip() and email.count("@") == 1
    assert email.endswith("@" + domain) and len(email) <= 254
    assert normalize_email(email) == result


@given(st.one_of(addresses(), st.text(alphabet=LOCAL_CHARS + "@.", min_size=3, max_size=60)))
def test_what_we_accept_email_validator_accepts(value: str) -> None:
    result = normalize_email(value)
    if result is None:
        return
    checked = email_validator.validate_email(result[0], check_deliverability=False)
    assert checked.ascii_domain.lower() == result[1]


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "plain",
        "@example.com",
        "a@",
        "a@b",
        "a@@b.com",
        "a b@c.com",
        "a@b..com",
        "a@-b.com",
        "a..b@c.com",
        ".a@c.com",
        "a.@c.com",
        '"quoted"@c.com',
        "Ann <ann@c.com>",
        "a@c.com,b@c.com",
        None,
        42,
        "x" * 65 + "@c.com",
        "a@" + "b" * 64 + ".com",
    ],
)
def test_unusable_values_are_refused(value: object) -> None:
    assert normalize_email(value) is None


def test_internationalised_domains_become_punycode() -> None:
    assert normalize_email("Jürgen@Bücher.DE") == ("jürgen@xn--bcher-kva.de", "xn--bcher-kva.de")
    assert normalize_email("ann@bücher.de") == ("ann@xn--bcher-kva.de", "xn--bcher-kva.de")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Example.COM", "example.com"),
        ("@example.com", "example.com"),
        ("example.com.", "example.com"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("not a domain", None),
        ("localhost", None),
        ("", None),
    ],
)
def test_domains(raw: str, expected: str | None) -> None:
    assert normalize_domain(raw) == expected


def test_derived_columns() -> None:
    assert (
        sort_name("Ann", "Lee") == "ann lee"
        and sort_name(None, "Lee") == "lee"
        and sort_name(None, None) == ""
    )
    assert search_text("a@b.co", "Ann", None, "Acme GmbH") == "a@b.co ann acme gmbh"
