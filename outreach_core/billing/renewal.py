"""The `billing` worker's pass: write down the periods that rolled over, and end plans cancelled at their
period's end.

Nothing waits for this pass: every read computes the current period from the plan's anchor and `now`
(`rules.billing_period`, `rules.effective_status`), so `renewsAt` moves on and `emailsSentThisPeriod`
restarts at the very instant a period ends. The pass only makes the stored columns agree, so that other
readers of the database (reports, an operator's SQL) see the same.
"""

from __future__ import annotations

from outreach_core.billing.rules import billing_period
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import workspaces

BATCH = 500


async def roll_over_periods(ctx: SystemContext) -> int:
    """Workspaces whose stored `renewsAt` has passed: a plan set to cancel at the period's end becomes
    `canceled`; any other moves `renewsAt` to the end of the period containing now. Returns how many rows
    changed (at most `BATCH` a pass; the worker runs again at once while there are more)."""
    ws = system_scope(workspaces)
    due = (
        await ctx.conn.execute(
            ws.select(
                ws.c.id,
                ws.c.plan_interval,
                ws.c.plan_period_start,
                ws.c.cancel_at_period_end,
                ws.c.plan_status,
            )
            .where(ws.c.plan_renews_at <= ctx.now, ws.c.plan.is_not(None), ws.c.plan_status != "canceled")
            .order_by(ws.c.plan_renews_at)
            .limit(BATCH)
        )
    ).all()
    for row in due:
        if row.cancel_at_period_end:
            values: dict[str, object] = {"plan_status": "canceled"}
        else:
            period = billing_period(ctx.now, row.plan_period_start, row.plan_interval)
            # a plan without an anchor (set by hand) has nothing to compute from
            values = {"plan_renews_at": period[1] if period is not None else None}
        await ctx.conn.execute(ws.update().where(ws.c.id == row.id).values(**values))
    return len(due)
