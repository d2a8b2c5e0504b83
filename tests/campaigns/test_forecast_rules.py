"""The forecast's simulation (pure): which limit binds, startOn/endOn, windows in the leads' time zones, the
plan's monthly emails, follow-ups after waitDays. Days are derived from the real date (a fixed clock at the
next Monday), never fixed beside it."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from outreach_core.campaigns.forecast_rules import (
    Allowance,
    Facts,
    MailboxGroup,
    Outcome,
    Waiting,
    forecast,
)
from outreach_core.campaigns.schedule import Schedule
from outreach_core.mailboxes.rules import MailboxLimits

_TODAY = dt.datetime.now(dt.UTC).date()
MONDAY = dt.datetime.combine(_TODAY + dt.timedelta(days=7 - _TODAY.weekday()), dt.time(6), tzinfo=dt.UTC)
"""Next Monday, 06:00 UTC."""
ALL_DAY = Schedule("UTC", 0, 1440, 127, None, None)
PLENTY = Allowance(1_000_000, 1_000_000, None)


def _box(limit: int, *, count: int = 1, ramp: bool = False, gaps: tuple[int, int] = (30, 30)) -> MailboxGroup:
    limits = MailboxLimits(limit, ramp, 2, 1, MONDAY.date().isoformat(), "UTC", None, 0)
    return MailboxGroup(count, limits, *gaps)


def _run(
    leads: int,
    boxes: list[MailboxGroup],
    *,
    schedule: Schedule = ALL_DAY,
    cap: int | None = None,
    waits: tuple[int, ...] = (0,),
    allowance: Allowance | None = PLENTY,
    waiting: list[Waiting] | None = None,
) -> Outcome:
    return forecast(
        Facts(
            now=MONDAY,
            schedule=schedule,
            daily_cap=cap,
            first_sent_today=0,
            wait_days=waits,
            mailboxes=boxes,
            waiting=waiting if waiting is not None else [Waiting(None, 0, None, leads)],
            allowance=allowance,
        )
    )


def _firsts(o: Outcome) -> list[int]:
    return [f for _, f, _ in o.days]


def _day(offset: int) -> dt.date:
    return MONDAY.date() + dt.timedelta(days=offset)


def test_mailbox_limits_bind_and_the_ramp_grows_them() -> None:
    flat = _run(25, [_box(5, count=2)])
    assert _firsts(flat) == [10, 10, 5] and flat.limited_by == ["mailboxLimits"]
    assert flat.last_first_email_on == flat.last_email_on == _day(2)
    ramping = _run(20, [_box(50, ramp=True)])  # 2, 3, 4, 5, 6 a day
    assert _firsts(ramping) == [2, 3, 4, 5, 6] and ramping.limited_by == ["rampUp"]


def test_daily_cap_and_follow_ups_after_wait_days() -> None:
    found = _run(6, [_box(100)], cap=2, waits=(0, 2))
    assert [(f, u) for _, f, u in found.days] == [(2, 0), (2, 0), (2, 2), (0, 2), (0, 2)]
    assert found.limited_by == ["dailyCap"]
    assert found.last_first_email_on == _day(2) and found.last_email_on == _day(4)


def test_the_window_and_gaps_bind_and_weekends_send_nothing() -> None:
    # 09:00-10:00 weekdays, one email per 10 minutes and mailbox: 6 an hour (the hand-off may not start in
    # the window's last minute, so the hour gives 6, the first at the opening)
    weekdays = Schedule("UTC", 9 * 60, 10 * 60, 31, None, None)
    found = _run(40, [_box(500, gaps=(600, 600))], schedule=weekdays)
    firsts = _firsts(found)
    assert found.limited_by == ["window"]
    assert firsts[:5] == [6, 6, 6, 6, 6] and firsts[5:7] == [0, 0]  # Saturday, Sunday
    assert sum(firsts) == 40


def test_each_time_zone_sends_in_its_own_window() -> None:
    # one hour a day in each lead's zone: Tokyo's 09:00 is 00:00 UTC, New York's is 14:00 UTC (13:00 in
    # summer); each zone's leads only fill their own hour
    hour = Schedule("UTC", 9 * 60, 10 * 60, 127, None, None)
    waiting = [Waiting("Asia/Tokyo", 0, None, 12), Waiting("America/New_York", 0, None, 12)]
    found = _run(0, [_box(500, gaps=(600, 600))], schedule=hour, waiting=waiting)
    assert sum(_firsts(found)) == 24 and found.limited_by == ["window"]
    assert _firsts(found)[:2] == [
        6,
        12,
    ]  # Monday: New York's hour only (Tokyo's Monday 09:00 was before 06:00 UTC)


def test_start_on_end_on_and_leads_left_over() -> None:
    later = Schedule("UTC", 0, 1440, 127, _day(3).isoformat(), _day(4).isoformat())
    found = _run(30, [_box(10)], schedule=later)
    assert found.days[0][0] == _day(3) and _firsts(found) == [10, 10]
    assert found.unfinished == 10 and found.limited_by[0] == "startOn" and "endOn" in found.limited_by


def test_the_plans_monthly_emails_and_no_mailbox() -> None:
    found = _run(50, [_box(100)], allowance=Allowance(7, 1_000, None))
    assert _firsts(found)[0] == 7 and "plan" in found.limited_by
    assert sum(_firsts(found)) == 50  # the next month of the plan brings more
    nothing = _run(5, [])
    assert nothing.days == [] and nothing.limited_by == ["noMailboxes"] and nothing.unfinished == 5


def test_emails_already_sent_today_count() -> None:
    limits = MailboxLimits(5, False, 2, 1, MONDAY.date().isoformat(), "UTC", MONDAY.date().isoformat(), 4)
    found = _run(6, [MailboxGroup(1, limits, 30, 30)])
    assert _firsts(found) == [1, 5]


def _next_dst_change(zone: str) -> dt.date:
    """The next day (from the real date) on which `zone`'s UTC offset changes."""
    tz = ZoneInfo(zone)
    day = dt.datetime.now(dt.UTC).date()
    while True:
        noon = dt.datetime.combine(day, dt.time(12), tzinfo=tz)
        if (noon + dt.timedelta(days=1)).utcoffset() != noon.utcoffset():
            return day + dt.timedelta(days=1)
        day += dt.timedelta(days=1)


def test_a_dst_change_keeps_windows_in_local_time_and_loses_no_email() -> None:
    """Across Berlin's DST change the window stays 09:00-10:00 Berlin time (its UTC hour moves) and a
    mailbox that can send 6 an hour sends 6 every day; every lead gets both emails."""
    change = _next_dst_change("Europe/Berlin")
    start = dt.datetime.combine(change - dt.timedelta(days=3), dt.time(0), tzinfo=dt.UTC)
    hour = Schedule("Europe/Berlin", 9 * 60, 10 * 60, 127, None, None)
    limits = MailboxLimits(500, False, 2, 1, start.date().isoformat(), "Europe/Berlin", None, 0)
    found = forecast(
        Facts(
            now=start,
            schedule=hour,
            daily_cap=None,
            first_sent_today=0,
            wait_days=(0, 1),
            mailboxes=[MailboxGroup(1, limits, 600, 600)],
            waiting=[Waiting(None, 0, None, 30)],
            allowance=PLENTY,
        )
    )
    assert [f + u for _, f, u in found.days] == [6] * len(found.days)
    assert sum(f for _, f, _ in found.days) == 30 and sum(u for _, _, u in found.days) == 30
    assert found.days[0][0] == start.date() and change in [d for d, _, _ in found.days]
