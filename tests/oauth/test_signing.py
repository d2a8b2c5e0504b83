"""Signed, expiring, purpose-bound tokens (pure)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from outreach_core.kernel.signing import InvalidSignature, SignatureExpired, sign, verify

SECRET = "a-test-secret"
NOW = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)
PAYLOAD = {"client_id": "c1", "scopes": ["a", "b"], "state": None, "explicit": True, "text": "ünïcode"}


def test_round_trip() -> None:
    token = sign(SECRET, "consent", PAYLOAD, NOW + timedelta(minutes=10))
    assert verify(SECRET, "consent", token, NOW) == PAYLOAD
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")


def test_expired_token_is_refused() -> None:
    token = sign(SECRET, "consent", PAYLOAD, NOW + timedelta(minutes=10))
    assert verify(SECRET, "consent", token, NOW + timedelta(minutes=9, seconds=59)) == PAYLOAD
    with pytest.raises(SignatureExpired):
        verify(SECRET, "consent", token, NOW + timedelta(minutes=10))


def test_other_purpose_or_secret_is_refused() -> None:
    token = sign(SECRET, "consent", PAYLOAD, NOW + timedelta(minutes=10))
    with pytest.raises(InvalidSignature) as wrong_purpose:
        verify(SECRET, "unsubscribe", token, NOW)
    assert not isinstance(wrong_purpose.value, SignatureExpired)
    with pytest.raises(InvalidSignature):
        verify("another-secret", "consent", token, NOW)


def test_tampering_is_refused() -> None:
    token = sign(SECRET, "consent", PAYLOAD, NOW + timedelta(minutes=10))
    body, mac = token.split(".")
    document = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    document["d"]["client_id"] = "attacker"
    forged_body = base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")
    flipped_mac = ("A" if mac[0] != "A" else "B") + mac[1:]
    for bad in (
        f"{forged_body}.{mac}",
        f"{body}.{flipped_mac}",
        f"{body}.{mac}x",
        f"{body}!.{mac}",
        body,
        "",
        f"{body}.{mac}.{mac}",
        "x" * 20_000,
    ):
        with pytest.raises(InvalidSignature):
            verify(SECRET, "consent", bad, NOW)


def test_only_the_canonical_spelling_of_a_token_passes() -> None:
    """A 32-byte MAC is 43 base64 characters; the last carries 2 bits the decoder ignores. The three other
    values of those bits decode to the same MAC, and must not pass as the same token."""
    token = sign(SECRET, "consent", PAYLOAD, NOW + timedelta(minutes=10))
    body, mac = token.split(".")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(mac[-1])
    look_alikes = [alphabet[(last & ~3) | low] for low in range(4) if (last & ~3) | low != last]
    for spelling in look_alikes:
        variant = f"{body}.{mac[:-1]}{spelling}"
        assert base64.urlsafe_b64decode(variant.split(".")[1] + "=") == base64.urlsafe_b64decode(mac + "=")
        with pytest.raises(InvalidSignature):
            verify(SECRET, "consent", variant, NOW)
    assert verify(SECRET, "consent", token, NOW) == PAYLOAD


def test_refuses_misuse() -> None:
    with pytest.raises(ValueError):
        sign(SECRET, "consent", PAYLOAD, datetime(2026, 1, 1))  # naive
    with pytest.raises(ValueError):
        sign("", "consent", PAYLOAD, NOW)
    with pytest.raises(ValueError):
        sign(SECRET, "", PAYLOAD, NOW)


def test_several_secrets_verify_tokens_of_any_of_them() -> None:
    old = sign("old-secret", "consent", PAYLOAD, NOW + timedelta(minutes=10))
    new = sign(SECRET, "consent", PAYLOAD, NOW + timedelta(minutes=10))
    for token in (old, new):
        assert verify([SECRET, "older-secret", "old-secret"], "consent", token, NOW) == PAYLOAD
    with pytest.raises(InvalidSignature):
        verify([SECRET, "older-secret"], "consent", old, NOW)
    with pytest.raises(ValueError):
        verify([], "consent", new, NOW)
    with pytest.raises(ValueError):
        verify([SECRET, ""], "consent", new, NOW)
