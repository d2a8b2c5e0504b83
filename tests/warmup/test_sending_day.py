"""When the next warmup email of a mailbox goes: spread over the rest of its sending day (until 20:00 in the
mailbox's time zone), and after that day is over, not before the next day starts. Times are today's, from
the real date, in the mailbox's zone."""

from __future__ import annotations

import datetime as dt
import random
import zoneinfo

import pytest

from outreach_core.warmup.rules import DAY_END_HOUR, next_send_at

ZONE = "Europe/Berlin"


def _today_at(hour: int, minute: int = 0) -> dt.datetime:
    tz = zoneinfo.ZoneInfo(ZONE)
    today = dt.datetime.now(tz).date()
    return dt.datetime.combine(today, dt.time(hour, minute), tzinfo=tz).astimezone(dt.UTC)


def test_during_the_day_the_emails_left_share_the_hours_left() -> None:
    now = _today_at(8)
    at = next_send_at(now, ZONE, left=11, rng=random.Random(1), min_gap_s=300)
    # 12 hours left shared by 12 gaps: about an hour (jitter 0.5-1.5), and within today's sending day
    assert dt.timedelta(minutes=30) <= at - now <= dt.timedelta(minutes=90)
    assert at < _today_at(DAY_END_HOUR)


@pytest.mark.parametrize("hour,minute", [(DAY_END_HOUR, 0), (21, 30), (23, 59)])
def test_after_the_sending_day_the_next_email_waits_for_tomorrow(hour: int, minute: int) -> None:
    now = _today_at(hour, minute)
    at = next_send_at(now, ZONE, left=5, rng=random.Random(1), min_gap_s=0)
    tomorrow = now.astimezone(zoneinfo.ZoneInfo(ZONE)).date() + dt.timedelta(days=1)
    assert at.astimezone(zoneinfo.ZoneInfo(ZONE)) == dt.datetime.combine(
        tomorrow, dt.time(), tzinfo=zoneinfo.ZoneInfo(ZONE)
    )
