"""Plan catalogue of the `local` billing provider and the monthly allowance's period (pure, no I/O)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

PlanId = Literal["starter", "growth", "pro", "scale", "agency"]
Interval = Literal["month", "year"]


@dataclass(frozen=True)
class Plan:
    id: PlanId
    name: str
    emails_per_month: int
    contacts: int
    mailboxes: int | None  # None = unlimited
    ai_drafts: int
    dedicated_ips_included: int


PLANS: dict[str, Plan] = {
    "starter": Plan("starter", "Starter", 6_000, 2_000, 3, 50, 0),
    "growth": Plan("growth", "Growth", 30_000, 10_000, 10, 200, 0),
    "pro": Plan("pro", "Pro", 150_000, 50_000, 50, 1_000, 1),
    "scale": Plan("scale", "Scale", 600_000, 250_000, 200, 3_000, 2),
    "agency": Plan("agency", "Agency", 2_000_000, 1_000_000, None, 10_000, 5),
}

ACTIVE_STATUSES = frozenset({"active", "trialing"})


def is_active(plan: str | None, status: str | None) -> bool:
    return plan in PLANS and status in ACTIVE_STATUSES


def month_start(now: dt.datetime, period_start: dt.datetime | None) -> dt.datetime:
    """Start of the plan's current monthly allowance: the billing period start when known (moved forward by
    whole months to the latest one not after `now`), else the first of this month (UTC)."""
    if period_start is None:
        return now.astimezone(dt.UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start = period_start.astimezone(dt.UTC)
    months = (now.year - start.year) * 12 + now.month - start.month
    for back in (0, 1):
        candidate = _add_months(start, months - back)
        if candidate <= now:
            return candidate
    return start  # pragma: no cover - period starts in the future


def _add_months(when: dt.datetime, months: int) -> dt.datetime:
    year, month = divmod(when.month - 1 + months, 12)
    year += when.year
    last_day = (dt.date(year + (month + 1) // 12, (month + 1) % 12 + 1, 1) - dt.timedelta(days=1)).day
    return when.replace(year=year, month=month + 1, day=min(when.day, last_day))
