"""The plan's monthly allowance: when the current period began and how many emails were sent in it.

One rule for both sides: the sender counts these emails against the plan's `emailsPerMonth`
(`sending/operations.py`), and `/me` reports them as `emailsSentThisPeriod`. An email counts from the
moment it may have left: handed to SMTP and accepted or bounced (`sent_at` in the period), or still in
flight or lost in a crash (`sending`, `unknown`, written in the period). Refused and retried sends do not
count.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func

from outreach_core.billing.rules import month_start
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import sends

IN_FLIGHT = ("sending", "unknown")


def period_start(now: dt.datetime, plan_period_start: dt.datetime | None) -> dt.datetime:
    """Start of the current monthly allowance: the billing period start moved forward by whole months to
    the latest one not after `now` (yearly plans renew their emails monthly too), else the first of this
    month (UTC)."""
    return month_start(now, plan_period_start)


async def emails_sent_this_period(ctx: WorkspaceContext, plan_period_start: dt.datetime | None) -> int:
    """Emails of the caller's workspace that count against this period's allowance (see the module
    docstring). Two index range counts: `(workspace_id, sent_at)` from the period start, and the in-flight
    rows by `(status, created_at)`; never a scan of the whole ledger."""
    start = period_start(ctx.now, plan_period_start)
    table = scoped(ctx, sends)
    done = await ctx.conn.execute(table.select(func.count()).where(sends.c.sent_at >= start))
    in_flight = await ctx.conn.execute(
        table.select(func.count()).where(sends.c.status.in_(IN_FLIGHT), sends.c.created_at >= start)
    )
    return int(done.scalar_one()) + int(in_flight.scalar_one())
