"""Plans as data, billing periods and the monthly allowances (pure, no I/O).

The one table of plans (`PLANS`, shown in docs/billing.md) is what every limit reads: emails a month (the
sender), contacts (lead create and import), mailbox slots (mailbox create and import), AI drafts a month
(every AI draft) and the dedicated IPs included. Periods are computed from the plan's anchor
(`plan_period_start`) and `now`, never read from a stored end: a period rolls over at `renewsAt` the very
instant it passes, whether or not the `billing` worker has run since (it only writes the new `renewsAt`
down and applies cancellations, see `billing/renewal.py`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

PlanId = Literal["starter", "growth", "pro", "scale", "agency"]
Interval = Literal["month", "year"]


@dataclass(frozen=True)
class Plan:
    id: PlanId
    name: str
    emails_per_month: int
    contacts: int
    mailboxes: int | None  # None = unlimited
    ai_drafts: int  # AI drafts a month on the service's AI keys
    dedicated_ips_included: int
    price_month_usd: int
    price_year_usd: int

    def price(self, interval: Interval) -> int:
        return self.price_year_usd if interval == "year" else self.price_month_usd


PLANS: dict[str, Plan] = {
    "starter": Plan("starter", "Starter", 6_000, 2_000, 3, 50, 0, 37, 370),
    "growth": Plan("growth", "Growth", 30_000, 10_000, 10, 200, 0, 97, 970),
    "pro": Plan("pro", "Pro", 150_000, 50_000, 50, 1_000, 1, 297, 2_970),
    "scale": Plan("scale", "Scale", 600_000, 250_000, 200, 3_000, 2, 697, 6_970),
    "agency": Plan("agency", "Agency", 2_000_000, 1_000_000, None, 10_000, 5, 1_497, 14_970),
}

DEDICATED_IP_PRICE_USD: dict[str, int] = {"month": 49, "year": 490}
"""The price of one dedicated IP add-on per billing cycle of the plan."""
DEDICATED_IPS_MAX = 50
"""The most add-ons a workspace may hold (the spec's quantity limit)."""

ACTIVE_STATUSES = frozenset({"active", "trialing"})


def is_active(plan: str | None, status: str | None) -> bool:
    """Whether a plan and status (as stored) allow the plan's use; see `in_force` for the whole rule."""
    return plan in PLANS and status in ACTIVE_STATUSES


def effective_status(row: Any, now: dt.datetime) -> str | None:
    """The plan's status at `now`: as stored, except that a plan set to cancel at the period's end is
    `canceled` from `renewsAt` on (before the `billing` worker writes it down)."""
    status: str | None = row.plan_status
    renews: dt.datetime | None = row.plan_renews_at
    if status in ACTIVE_STATUSES and row.cancel_at_period_end and renews is not None and now >= renews:
        return "canceled"
    return status


def in_force(row: Any, now: dt.datetime) -> Plan | None:
    """The plan a `workspaces` row (plan, plan_status, cancel_at_period_end, plan_renews_at) has in force at
    `now`, or None: no plan, not active, or cancelled and past its period's end."""
    plan = PLANS.get(row.plan or "")
    if plan is None or effective_status(row, now) not in ACTIVE_STATUSES:
        return None
    return plan


def add_months(when: dt.datetime, months: int) -> dt.datetime:
    """`when` moved by whole calendar months, the day clamped to the month's last (31 Jan + 1 = 28/29 Feb)."""
    year, month = divmod(when.month - 1 + months, 12)
    year += when.year
    last_day = (dt.date(year + (month + 1) // 12, (month + 1) % 12 + 1, 1) - dt.timedelta(days=1)).day
    return when.replace(year=year, month=month + 1, day=min(when.day, last_day))


def period_at(now: dt.datetime, anchor: dt.datetime, months: int) -> tuple[dt.datetime, dt.datetime]:
    """The period of `months` months from `anchor` (each boundary counted from the anchor itself, so a 31st
    stays the 31st where the month has one) that contains `now`: `(start, end)`, start <= now < end."""
    anchor = anchor.astimezone(dt.UTC)
    if now < anchor:
        return anchor, add_months(anchor, months)
    elapsed = (now.year - anchor.year) * 12 + now.month - anchor.month
    k = max(0, elapsed // months)
    start = add_months(anchor, k * months)
    while start > now:  # the same calendar month, but before the anchor's day or time
        k -= 1
        start = add_months(anchor, k * months)
    end = add_months(anchor, (k + 1) * months)
    while end <= now:  # pragma: no cover - defensive; k above is never too small by more than one
        k += 1
        start, end = end, add_months(anchor, (k + 1) * months)
    return start, end


def billing_period(
    now: dt.datetime, anchor: dt.datetime | None, interval: str | None
) -> tuple[dt.datetime, dt.datetime] | None:
    """The billing period (a month or a year from the anchor) containing `now`; None without an anchor."""
    if anchor is None:
        return None
    return period_at(now, anchor, 12 if interval == "year" else 1)


def allowance_period(now: dt.datetime, anchor: dt.datetime | None) -> tuple[dt.datetime, dt.datetime]:
    """The monthly allowance (emails, AI drafts) containing `now`: whole months from the plan's anchor
    (yearly plans renew their allowances monthly too), or the calendar month (UTC) without a plan."""
    if anchor is None:
        start = now.astimezone(dt.UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        return start, add_months(start, 1)
    return period_at(now, anchor, 1)


def month_start(now: dt.datetime, period_start: dt.datetime | None) -> dt.datetime:
    """Start of the plan's current monthly allowance (see `allowance_period`)."""
    return allowance_period(now, period_start)[0]
