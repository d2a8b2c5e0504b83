"""Dates for tests that run beside the real clock: derived from today, written as people write them.

A test whose server takes its time from the real clock must not fix a calendar date beside it (a date that is
"ahead" today is behind next month). These helpers give dates relative to today and the English words an
email would use for them, so the same test reads the same on any day (the suite is run a year ahead in CI).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def today() -> date:
    """Today in UTC (the day the server's clock is on)."""
    return datetime.now(UTC).date()


def next_weekday(weekday: int, *, after: date, at_least_days: int = 1) -> date:
    """The first `weekday` (0 = Monday) at least `at_least_days` after `after`."""
    day = after + timedelta(days=at_least_days)
    return day + timedelta(days=(weekday - day.weekday()) % 7)


def long_date(day: date) -> str:
    """`Thursday, December 3, 2026`."""
    return f"{WEEKDAYS[day.weekday()]}, {MONTHS[day.month - 1]} {day.day}, {day.year}"


def month_day(day: date) -> str:
    """`November 24th`: a date without its year, as an out-of-office text often writes it."""
    suffix = "th" if 10 <= day.day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day.day % 10, "th")
    return f"{MONTHS[day.month - 1]} {day.day}{suffix}"
