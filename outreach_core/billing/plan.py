"""A workspace's plan: the billing object of `/me`, the active-plan rule, and the operator's `plan set`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from outreach_core.billing.period import emails_sent_this_period
from outreach_core.billing.rules import PLANS, Interval, billing_period, effective_status, in_force
from outreach_core.billing.schemas import BillingSummary
from outreach_core.billing.store import PLAN_COLUMNS, plan_row
from outreach_core.kernel.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    system_scope,
    workspace_itself,
)
from outreach_core.kernel.db.tables import workspaces
from outreach_core.kernel.errors import InvalidInput, NotFound, PlanRequired


async def billing_summary(ctx: WorkspaceContext, row: Any) -> BillingSummary:
    """The billing object of the caller's workspace (`row` has its billing columns), with the emails sent
    in the current monthly allowance counted as the sender counts them."""
    return summarize(row, await emails_sent_this_period(ctx, row.plan_period_start), ctx.now)


def renews_at(row: Any, now: datetime) -> datetime | None:
    """When the current billing period ends: computed from the plan's anchor at `now`, so it moves on the
    moment a period ends (the stored `plan_renews_at` catches up at the `billing` worker's next pass). A plan
    cancelled at its period's end keeps the end it had."""
    if row.plan is None:
        return None
    stored: datetime | None = row.plan_renews_at
    if stored is not None and (row.cancel_at_period_end or now < stored):
        return stored  # the provider's own end while it lasts (Stripe's), and a cancelled plan's end
    period = billing_period(now, row.plan_period_start, row.plan_interval)
    return period[1] if period is not None else stored


def summarize(row: Any, emails_sent: int, now: datetime) -> BillingSummary:
    """The billing object from a workspace's billing columns and the emails sent this period."""
    plan = PLANS.get(row.plan) if row.plan else None
    return BillingSummary(
        plan=row.plan,
        plan_name=plan.name if plan else None,
        interval=row.plan_interval,
        status=effective_status(row, now),
        emails_per_month=plan.emails_per_month if plan else 0,
        contacts=plan.contacts if plan else 0,
        emails_sent_this_period=emails_sent,
        renews_at=renews_at(row, now),
        cancel_at_period_end=bool(row.cancel_at_period_end),
    )


async def require_active_plan(ctx: WorkspaceContext) -> None:
    """Refuse with 402 `plan_required` unless the caller's workspace has a plan in force."""
    row = await plan_row(ctx)
    if in_force(row, ctx.now) is None:
        raise PlanRequired(
            "This operation needs an active plan: choose one with POST /api/v1/billing/checkout (tool "
            "start_checkout), or ask the server's operator (`outreach plan set`).",
            {"plan": row.plan, "status": effective_status(row, ctx.now)},
        )


def plan_values(plan: str | None, interval: Interval, start: datetime) -> dict[str, Any]:
    """The workspace columns that give it `plan` billed every `interval` from `start` (a new period)."""
    if plan is not None and plan not in PLANS:
        raise InvalidInput.field("plan", f"unknown plan {plan!r}; one of {', '.join(PLANS)}")
    period = billing_period(start, start, interval) if plan else None
    return {
        "plan": plan,
        "plan_interval": interval if plan else None,
        "plan_status": "active" if plan else None,
        "plan_period_start": start if plan else None,
        "plan_renews_at": period[1] if period else None,
        "cancel_at_period_end": False,
    }


async def set_plan(
    ctx: SystemContext, workspace: str, plan: str | None, interval: Interval = "month"
) -> BillingSummary:
    """Operator command: give a workspace (id or slug) a plan, or none. Starts a new billing period."""
    values = plan_values(plan, interval, ctx.now)
    ws = system_scope(workspaces)
    row = (
        await ctx.conn.execute(ws.select(ws.c.id).where((ws.c.id == workspace) | (ws.c.slug == workspace)))
    ).one_or_none()
    if row is None:
        raise NotFound("workspace", workspace)
    await ctx.conn.execute(ws.update().where(ws.c.id == row.id).values(**values))
    updated = (await ctx.conn.execute(ws.select(*PLAN_COLUMNS).where(ws.c.id == row.id))).one()
    return await billing_summary(as_workspace(ctx, workspace_itself(row.id, "billing")), updated)
