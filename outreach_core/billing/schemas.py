from __future__ import annotations

from typing import Literal

from outreach_core.wire import Timestamp, WireModel


class BillingSummary(WireModel):
    """The billing object of GET /me."""

    plan: str | None
    plan_name: str | None
    interval: Literal["month", "year"] | None
    status: str | None
    emails_per_month: int
    contacts: int
    emails_sent_this_period: int
    renews_at: Timestamp | None
    cancel_at_period_end: bool
