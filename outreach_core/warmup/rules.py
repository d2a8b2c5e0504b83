"""Pure warmup rules (no I/O): the marker header and its token, the score, when the next warmup email goes,
and the wait reasons (docs/warmup.md)."""

from __future__ import annotations

import datetime as dt
import random
import re
import secrets
import zoneinfo

HEADER = "X-Outreach-Warmup"
"""Every warmup email (and warmup reply) carries this header with its token."""
TOKEN_PREFIX = "wu1-"
_TOKEN = re.compile(rb"(?im)^x-outreach-warmup:[ \t]*(wu1-[a-z0-9]{20,32})[ \t]*\r?$")
_TOKEN_ANYWHERE = re.compile(rb"(?i)x-outreach-warmup:[ \t]*(wu1-[a-z0-9]{20,32})")

SCORE_DAYS = 7
"""The score looks at the warmup emails a mailbox sent in the last 7 days."""
SCORE_MIN_EMAILS = 10
"""The score is null until at least this many of them were found (or went missing)."""
LOW_SCORE = 70.0
"""A score below this is a problem: a warning on the launch checklist and in `warmup_problems`."""
MISSING_AFTER = dt.timedelta(hours=24)
"""A warmup email not found in the recipient's inbox or spam folder within this long counts as missing (not
in the inbox)."""
KEEP = dt.timedelta(days=14)
"""Warmup emails are forgotten (deleted) this long after they were sent (the score looks at 7 days)."""
DAY_END_HOUR = 20
"""Warmup emails of a day are spread until 20:00 in the mailbox's time zone (then the rest go in turn)."""

POOL_OF_ONE = (
    "Warmup waits: no other active mailbox on this server has warmup on (the pool needs at least two)."
)
NOT_ACTIVE = "Warmup waits: the mailbox is not active (paused or in error)."
FULL_TODAY = "Warmup waits until tomorrow: the mailbox's daily limit is used up today."
BOUNCED = (
    "Removed from the warmup pool: warmup emails to this mailbox bounced ({reason}). Turn warmup on again "
    "once it receives mail."
)


def new_token() -> str:
    """A fresh token: `wu1-` and 26 random lowercase letters and digits (about 130 bits)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return TOKEN_PREFIX + "".join(secrets.choice(alphabet) for _ in range(26))


def header_token(raw: bytes) -> str | None:
    """The warmup token of a message's own header section (None when it is no warmup email)."""
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        end = raw.find(b"\n\n")
    head = raw if end < 0 else raw[: end + 2]
    found = _TOKEN.search(head)
    return found.group(1).decode().lower() if found else None


def quoted_tokens(raw: bytes) -> list[str]:
    """Warmup tokens anywhere in a message (a bounce report quoting the warmup email's header)."""
    return sorted({m.group(1).decode().lower() for m in _TOKEN_ANYWHERE.finditer(raw)})


def score(inbox: int, spam: int, missing: int) -> float | None:
    """Share (0-100, one decimal) of the warmup emails found in the inbox among those found or missing;
    None below `SCORE_MIN_EMAILS`."""
    total = inbox + spam + missing
    if total < SCORE_MIN_EMAILS:
        return None
    return round(100.0 * inbox / total, 1)


def local_today(now: dt.datetime, timezone: str) -> dt.date:
    return now.astimezone(_zone(timezone)).date()


def next_send_at(
    now: dt.datetime, timezone: str, left: int, rng: random.Random, min_gap_s: float
) -> dt.datetime:
    """When the next of `left` warmup emails of today goes: the rest of the sending day (until
    `DAY_END_HOUR`, local) shared evenly, with jitter, never sooner than `min_gap_s`. Once the sending day
    is over, the next one goes when tomorrow starts (a new day and a new target), not every `min_gap_s`
    through the evening."""
    tz = _zone(timezone)
    local = now.astimezone(tz)
    end = dt.datetime.combine(local.date(), dt.time(DAY_END_HOUR), tzinfo=tz)
    if local >= end:
        return tomorrow_start(now, timezone)
    span = (end - local).total_seconds()
    gap = span / (left + 1) if left > 0 else span
    return now + dt.timedelta(seconds=max(min_gap_s, gap * rng.uniform(0.5, 1.5)))


def tomorrow_start(now: dt.datetime, timezone: str) -> dt.datetime:
    tz = _zone(timezone)
    tomorrow = now.astimezone(tz).date() + dt.timedelta(days=1)
    return dt.datetime.combine(tomorrow, dt.time(), tzinfo=tz).astimezone(dt.UTC)


def permanent_refusal(phase: str, code: int | None) -> bool:
    """A recipient refused for good (5xx at RCPT or after DATA): the address does not take warmup email."""
    return phase in ("rcpt", "data") and code is not None and 500 <= code < 600


def _zone(timezone: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")
