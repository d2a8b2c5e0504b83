"""A campaign's sending schedule: its window, days and dates, in each lead's time zone, and when a follow-up
is due (pure, no I/O).

Used by the launch answer (`next_send.py`), the forecast (`forecast/`) and the sender's scheduling pass: a
lead gets an email only inside the campaign's window on an allowed day in the lead's own time zone (the
campaign's `timezoneFallback` for leads without one), from `startOn` to `endOn`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from outreach_core.campaigns.rules import next_window_opening
from outreach_core.kernel.wire import RowRecord

WINDOW_MARGIN = dt.timedelta(minutes=1)
"""No hand-off starts in the last minute of a window, so a send planned at its end cannot arrive after it."""


def zone(name: str | None, fallback: str) -> ZoneInfo:
    """The lead's time zone, else the campaign's fallback (also when the lead's name is not a known zone)."""
    for candidate in (name, fallback, "UTC"):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return ZoneInfo("UTC")  # pragma: no cover - UTC always exists


@dataclass(frozen=True)
class Schedule(RowRecord):
    """A campaign's sending schedule."""

    timezone_fallback: str
    window_start: int  # minutes after midnight
    window_end: int
    days: int  # bit 0 = Monday
    start_on: str | None  # YYYY-MM-DD in timezone_fallback
    end_on: str | None


def schedule_of(row: Any) -> Schedule:
    """The sending schedule of a `campaigns` row."""
    return Schedule.from_row(row)


def campaign_day(now: dt.datetime, schedule: Schedule) -> dt.date:
    return now.astimezone(zone(schedule.timezone_fallback, "UTC")).date()


def not_started(now: dt.datetime, schedule: Schedule) -> bool:
    """Before `startOn` (a date in the fallback time zone)."""
    return schedule.start_on is not None and campaign_day(now, schedule) < dt.date.fromisoformat(
        schedule.start_on
    )


def ended(now: dt.datetime, schedule: Schedule) -> bool:
    """After `endOn`: nothing more goes out and the campaign pauses."""
    return schedule.end_on is not None and campaign_day(now, schedule) > dt.date.fromisoformat(
        schedule.end_on
    )


def in_window(now: dt.datetime, lead_timezone: str | None, schedule: Schedule) -> bool:
    """`now` is inside the window on an allowed day in the lead's time zone (else the fallback), and not in
    the window's last minute."""
    tz = zone(lead_timezone, schedule.timezone_fallback)
    local = now.astimezone(tz)
    window = _window(local.date(), tz, schedule)
    return window is not None and window[0] <= local < window[1]


def window_on(
    day: dt.date, lead_timezone: str | None, schedule: Schedule
) -> tuple[dt.datetime, dt.datetime] | None:
    """The lead's sending window on `day` (a calendar day in the lead's time zone, else the fallback): from
    its opening to the last moment a hand-off may start (its end less `WINDOW_MARGIN`), as wall-clock times
    in that zone; None on a day the schedule does not send. `in_window` is `now` inside it."""
    return _window(day, zone(lead_timezone, schedule.timezone_fallback), schedule)


def _window(day: dt.date, tz: ZoneInfo, schedule: Schedule) -> tuple[dt.datetime, dt.datetime] | None:
    if not schedule.days & (1 << day.weekday()):
        return None
    midnight = dt.datetime.combine(day, dt.time(), tzinfo=tz)
    opens = midnight + dt.timedelta(minutes=schedule.window_start)
    closes = midnight + dt.timedelta(minutes=schedule.window_end)
    return opens, closes - WINDOW_MARGIN


def next_step_at(sent_at: dt.datetime, wait_days: int) -> dt.datetime:
    """When the next step becomes due: `waitDays` after the previous email."""
    return sent_at + dt.timedelta(days=wait_days)


def window_opens(now: dt.datetime, lead_timezone: str | None, schedule: Schedule) -> dt.datetime:
    """When the lead's window next opens (at or after `now`); a week later when the schedule can never send
    (the launch checklist refuses such schedules, so this only guards against later edits)."""
    tz = zone(lead_timezone, schedule.timezone_fallback)
    # Past the margin at the end of today's window: look from the window's end on.
    probe = now
    local = now.astimezone(tz)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    closes = midnight + dt.timedelta(minutes=schedule.window_end)
    if closes - WINDOW_MARGIN <= local < closes:
        probe = closes.astimezone(dt.UTC)
    opening = next_window_opening(
        probe,
        timezone=tz.key,
        window_start=schedule.window_start,
        window_end=schedule.window_end,
        days=schedule.days,
        start_on=None,
    )
    return opening.astimezone(dt.UTC) if opening is not None else now + dt.timedelta(days=7)
