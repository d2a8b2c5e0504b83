"""The billing columns of a workspace as the billing modules read them (never the whole row: columns added
later must not break code written against an older schema)."""

from __future__ import annotations

from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import workspaces

PLAN_COLUMNS = (
    workspaces.c.plan,
    workspaces.c.plan_interval,
    workspaces.c.plan_status,
    workspaces.c.plan_renews_at,
    workspaces.c.plan_period_start,
    workspaces.c.cancel_at_period_end,
)
"""What the plan in force and the billing object of /me are computed from."""

BILLING_COLUMNS = (
    workspaces.c.id,
    workspaces.c.name,
    *PLAN_COLUMNS,
    workspaces.c.dedicated_ip_addons,
    workspaces.c.billing_customer_id,
    workspaces.c.billing_subscription_id,
    workspaces.c.billing_payer_id,
    workspaces.c.billing_event_at,
    workspaces.c.own_ai_key,
)


async def billing_row(ctx: WorkspaceContext, *, for_update: bool = False) -> Any:
    """The caller's workspace's billing columns (locked on PostgreSQL with `for_update`)."""
    stmt = scoped(ctx, workspaces).select(*BILLING_COLUMNS)
    if for_update:
        stmt = stmt.with_for_update()
    return (await ctx.conn.execute(stmt)).one()


async def plan_row(ctx: WorkspaceContext) -> Any:
    """The caller's workspace's plan columns (`PLAN_COLUMNS`), for the limits that depend on the plan."""
    return (await ctx.conn.execute(scoped(ctx, workspaces).select(*PLAN_COLUMNS))).one()
