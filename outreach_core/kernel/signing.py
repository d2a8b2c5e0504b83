"""Signed, expiring, purpose-bound tokens (HMAC-SHA256): OAuth consent requests, unsubscribe links, ...

A token is `<body>.<mac>`, both URL-safe base64 without padding. The body is the JSON
`{"d": payload, "exp": <unix seconds>}`; the MAC covers the purpose and the body, so a token signed for one
purpose is refused for any other, and nothing in it can change without the MAC failing. The payload is
readable by whoever holds the token: sign data that must not be altered, never data that must stay secret.

Key rotation: tokens are signed with the current secret (`OUTREACH_SECRET_KEY`) and verified against it and
every earlier one (`OUTREACH_SECRET_KEY_PREVIOUS`, see `Settings.signing_keys`), so links in emails already
sent keep working after a rotation.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from outreach_core.kernel.errors import BadRequest

_B64URL = re.compile(r"[A-Za-z0-9_-]+")
MAX_TOKEN_LENGTH = 16_384
"""Longer input is refused before any decoding work (the longest legitimate token is a few kB)."""


class InvalidSignature(BadRequest):
    """The token was altered, truncated, signed with another key, or signed for another purpose."""

    code = "invalid_signature"


class SignatureExpired(InvalidSignature):
    """The token is authentic but its expiry has passed."""

    code = "signature_expired"


def sign(secret: str, purpose: str, payload: dict[str, Any], expires_at: datetime) -> str:
    """Sign `payload` (JSON-serializable) for `purpose`, valid until `expires_at` (timezone-aware)."""
    if expires_at.tzinfo is None:
        raise ValueError("expires_at must be timezone-aware")
    _check_inputs(secret, purpose)
    document = {"d": payload, "exp": int(expires_at.timestamp())}
    body = _b64encode(json.dumps(document, separators=(",", ":"), sort_keys=True).encode())
    return f"{body}.{_b64encode(_mac(secret, purpose, body))}"


def verify(secret: str | Sequence[str], purpose: str, token: str, now: datetime) -> dict[str, Any]:
    """Return the payload of a token made by `sign(<one of the secrets>, purpose, ...)` that has not expired
    at `now`. `secret` is one secret or several (current first, then earlier ones after a key rotation).

    Raises `InvalidSignature` when the token is malformed, altered, or signed for another purpose or with
    none of the secrets, and `SignatureExpired` when it is authentic but past its expiry.
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("verifying needs at least one secret")
    for one in secrets:
        _check_inputs(one, purpose)
    if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH or token.count(".") != 1:
        raise InvalidSignature("The signed token is malformed.")
    body, mac_text = token.split(".")
    try:
        given_mac = _b64decode(mac_text)
    except ValueError as exc:
        raise InvalidSignature("The signed token is malformed.") from exc
    if not any(hmac.compare_digest(given_mac, _mac(one, purpose, body)) for one in secrets):
        raise InvalidSignature("The signed token was altered or is not meant for this use.")
    try:
        decoded = json.loads(_b64decode(body))
    except (ValueError, UnicodeDecodeError) as exc:  # authentic but unreadable: only a bug can cause this
        raise InvalidSignature("The signed token is malformed.") from exc
    if (
        not isinstance(decoded, dict)
        or not isinstance(decoded.get("d"), dict)
        or not isinstance(decoded.get("exp"), int)
    ):
        raise InvalidSignature("The signed token is malformed.")
    if now.timestamp() >= decoded["exp"]:
        raise SignatureExpired("The signed token has expired.")
    payload: dict[str, Any] = decoded["d"]
    return payload


def _mac(secret: str, purpose: str, body: str) -> bytes:
    return hmac.new(_signing_key(secret), purpose.encode() + b"\x00" + body.encode(), hashlib.sha256).digest()


@lru_cache(maxsize=16)
def _signing_key(secret: str) -> bytes:
    """A key of its own, derived from the service secret (which also encrypts stored passwords); derived
    once per secret (tracking links verify one on every click)."""
    return hmac.new(secret.encode(), b"outreach/signing/v1", hashlib.sha256).digest()


def _check_inputs(secret: str, purpose: str) -> None:
    if not secret:
        raise ValueError("an empty signing secret is never acceptable")
    if not purpose or "\x00" in purpose:
        raise ValueError("purpose must be a non-empty string without NUL")


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    if not _B64URL.fullmatch(text):
        raise ValueError("not URL-safe base64")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:
        raise ValueError("invalid base64") from exc
    # The last character's unused low bits are ignored by the decoder; refusing every spelling but the one
    # we make keeps a token from having look-alike variants that pass.
    if _b64encode(raw) != text:
        raise ValueError("not the canonical base64 spelling")
    return raw
