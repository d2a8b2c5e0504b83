"""Opaque, time-ordered string identifiers (ULID layout: 48-bit milliseconds + 80 random bits)."""

from __future__ import annotations

import base64
import os
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_id(prefix: str) -> str:
    """A new id such as `ws_01jd5x...`. Lexicographic order follows creation time within a prefix."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


_RFC_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _CROCKFORD.encode())


def new_ids(prefix: str, count: int) -> list[str]:
    """`count` new ids at once (bulk inserts): one clock read and one random read for the whole batch.

    Same layout as `new_id`: the millisecond time in the first 10 characters, then 80 random bits (16
    characters; 10 random bytes are exactly 16 base32 characters, so one encode serves every id)."""
    millis = int(time.time() * 1000)
    head = "".join(_CROCKFORD[(millis >> (5 * i)) & 31] for i in reversed(range(10)))
    randoms = base64.b32encode(os.urandom(10 * count)).translate(_RFC_TO_CROCKFORD).decode()
    return [f"{prefix}_{head}{randoms[16 * i : 16 * i + 16]}" for i in range(count)]
