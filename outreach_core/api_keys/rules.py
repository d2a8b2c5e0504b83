"""API key format and hashing (pure)."""

from __future__ import annotations

import hashlib
import secrets
import string

KEY_PREFIX = "osk_"
_ALPHABET = string.ascii_letters + string.digits
_BODY_LEN = 43  # ~256 bits of entropy
START_LEN = len(KEY_PREFIX) + 6


def generate_key() -> str:
    """A new secret API key, e.g. `osk_Xa81...` (shown once, never stored)."""
    return KEY_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(_BODY_LEN))


def hash_secret(secret: str) -> str:
    """SHA-256 hex of a high-entropy secret. Keys are random, so a slow hash buys nothing here."""
    return hashlib.sha256(secret.encode()).hexdigest()


def key_start(key: str) -> str:
    """The non-secret prefix shown in listings."""
    return key[:START_LEN]


def looks_like_api_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX) and len(token) == len(KEY_PREFIX) + _BODY_LEN
