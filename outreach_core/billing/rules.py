"""Plan catalogue of the `local` billing provider (pure data, no I/O)."""

from __future__ import annotations

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
