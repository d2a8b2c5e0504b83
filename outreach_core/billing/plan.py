"""Billing with the `local` provider: the operator sets plans; the core enforces them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from outreach_core.billing.period import emails_sent_this_period
from outreach_core.billing.rules import PLANS, Interval, is_active
from outreach_core.billing.schemas import BillingSummary
from outreach_core.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    scoped,
    system_scope,
    workspace_itself,
)
from outreach_core.db.tables import workspaces
from outreach_core.errors import InvalidInput, NotFound, PlanRequired


async def billing_summary(ctx: WorkspaceContext, row: Any) -> BillingSummary:
    """The billing object of the caller's workspace (`row` is its `workspaces` row), with the emails sent
    in the current monthly allowance counted as the sender counts them."""
    return summarize(row, await emails_sent_this_period(ctx, row.plan_period_start))


def summarize(row: Any, emails_sent: int) -> BillingSummary:
    """The billing object from a `workspaces` row and the emails sent this period."""
    plan = PLANS.get(row.plan) if row.plan else None
    return BillingSummary(
        plan=row.plan,
        plan_name=plan.name if plan else None,
        interval=row.plan_interval,
        status=row.plan_status,
        emails_per_month=plan.emails_per_month if plan else 0,
        contacts=plan.contacts if plan else 0,
        emails_sent_this_period=emails_sent,
        renews_at=row.plan_renews_at,
        cancel_at_period_end=bool(row.cancel_at_period_end),
    )


async def require_active_plan(ctx: WorkspaceContext) -> None:
    """Refuse with 402 `plan_required` unless the caller's workspace has an active plan."""
    ws = scoped(ctx, workspaces)
    row = (await ctx.conn.execute(ws.select(ws.c.plan, ws.c.plan_status))).one()
    if not is_active(row.plan, row.plan_status):
        raise PlanRequired(
            "This operation needs an active plan. An operator can set one with `outreach plan set`.",
            {"plan": row.plan, "status": row.plan_status},
        )


async def set_plan(
    ctx: SystemContext, workspace: str, plan: str | None, interval: Interval = "month"
) -> BillingSummary:
    """Operator command: give a workspace (id or slug) a plan, or none. Starts a new billing period."""
    if plan is not None and plan not in PLANS:
        raise InvalidInput.field("plan", f"unknown plan {plan!r}; one of {', '.join(PLANS)}")
    ws = system_scope(workspaces)
    row = (
        await ctx.conn.execute(ws.select().where((ws.c.id == workspace) | (ws.c.slug == workspace)))
    ).one_or_none()
    if row is None:
        raise NotFound("workspace", workspace)
    values: dict[str, Any] = {
        "plan": plan,
        "plan_interval": interval if plan else None,
        "plan_status": "active" if plan else None,
        "plan_period_start": ctx.now if plan else None,
        "plan_renews_at": _renewal(ctx.now, interval) if plan else None,
        "cancel_at_period_end": False,
    }
    await ctx.conn.execute(ws.update().where(ws.c.id == row.id).values(**values))
    updated = (await ctx.conn.execute(ws.select().where(ws.c.id == row.id))).one()
    return await billing_summary(as_workspace(ctx, workspace_itself(row.id, "billing")), updated)


def _renewal(now: datetime, interval: Interval) -> datetime:
    return now + (timedelta(days=365) if interval == "year" else timedelta(days=30))
