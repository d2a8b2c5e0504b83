"""Encryption of stored secrets (mailbox passwords) with `cryptography`'s MultiFernet.

Each server secret (`OUTREACH_SECRET_KEY`, then every key of `OUTREACH_SECRET_KEY_PREVIOUS`) is turned into a
Fernet key with HKDF-SHA256 bound to a purpose, so the same secret that signs tokens never serves directly as
an encryption key. New values are encrypted with the current key; values written under a previous key still
decrypt, and `reencrypt` moves them to the current one (key rotation, docs/mailboxes.md); `outreach keys
reencrypt` (`key_rotation.py`) does it for every encrypted column.
"""

from __future__ import annotations

import base64
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from outreach_core.kernel.settings import Settings

MAILBOX_PASSWORD = b"outreach mailbox password v1"


class UndecryptableSecret(Exception):
    """A stored value no configured key can decrypt (the key that wrote it was removed)."""


def _fernet_key(secret: str, purpose: bytes) -> bytes:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(secret.encode())
    return base64.urlsafe_b64encode(derived)


@lru_cache(maxsize=8)
def _cipher(keys: tuple[str, ...], purpose: bytes) -> MultiFernet:
    return MultiFernet([Fernet(_fernet_key(k, purpose)) for k in keys])


def cipher(settings: Settings, purpose: bytes = MAILBOX_PASSWORD) -> MultiFernet:
    """The current key first, then the previous ones (decryption tries each in turn)."""
    keys = (settings.resolved_secret_key(), *settings.previous_secret_keys())
    return _cipher(keys, purpose)


def encrypt(settings: Settings, plaintext: str, purpose: bytes = MAILBOX_PASSWORD) -> str:
    return cipher(settings, purpose).encrypt(plaintext.encode()).decode()


def decrypt(settings: Settings, token: str, purpose: bytes = MAILBOX_PASSWORD) -> str:
    try:
        return cipher(settings, purpose).decrypt(token.encode()).decode()
    except InvalidToken:
        raise UndecryptableSecret("no configured secret key decrypts this value") from None


def reencrypt(settings: Settings, token: str, purpose: bytes = MAILBOX_PASSWORD) -> str:
    """The same secret encrypted under the current key (unchanged plaintext)."""
    try:
        return cipher(settings, purpose).rotate(token.encode()).decode()
    except InvalidToken:
        raise UndecryptableSecret("no configured secret key decrypts this value") from None


def is_current(settings: Settings, token: str, purpose: bytes = MAILBOX_PASSWORD) -> bool:
    """Whether the current key alone decrypts `token` (nothing to re-encrypt)."""
    try:
        _cipher((settings.resolved_secret_key(),), purpose).decrypt(token.encode())
    except InvalidToken:
        return False
    return True
