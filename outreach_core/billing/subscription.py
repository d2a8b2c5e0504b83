"""Applying what the payment provider reports (a verified webhook event, or `sync_billing`) to a workspace.

Events may arrive twice and out of order: each event id is applied once (`billing_events`), and a report
older than the newest one applied (`billing_event_at`) changes nothing.
"""

from __future__ import annotations

import structlog

from outreach_core.billing.rules import PLANS
from outreach_core.kernel.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    scoped,
    system_scope,
    unscoped,
    workspace_itself,
)
from outreach_core.kernel.db.tables import billing_events, workspaces
from outreach_core.kernel.ports import BillingEvent, Subscription

_log = structlog.get_logger(__name__)


async def apply_subscription(ctx: WorkspaceContext, sub: Subscription) -> bool:
    """Record `sub` as the caller's workspace's subscription; False when it is older than what is recorded."""
    ws = scoped(ctx, workspaces)
    current = (
        await ctx.conn.execute(ws.select(workspaces.c.billing_event_at, workspaces.c.billing_payer_id))
    ).one()
    if (
        sub.event_at is not None
        and current.billing_event_at is not None
        and sub.event_at < current.billing_event_at
    ):
        return False
    plan = sub.plan if sub.plan in PLANS else None
    values = {
        "plan": plan,
        "plan_interval": sub.interval if plan else None,
        "plan_status": sub.status if plan else None,
        "plan_period_start": sub.period_start if plan else None,
        "plan_renews_at": sub.period_end if plan else None,
        "cancel_at_period_end": sub.cancel_at_period_end if plan else False,
        "dedicated_ip_addons": sub.dedicated_ip_addons,
        "billing_customer_id": sub.customer_id,
        "billing_subscription_id": sub.subscription_id,
        "billing_payer_id": sub.payer_id or current.billing_payer_id,
        "billing_event_at": sub.event_at or current.billing_event_at,
    }
    await ctx.conn.execute(ws.update().values(**values))
    return True


async def apply_billing_event(ctx: SystemContext, event: BillingEvent) -> bool:
    """Apply a verified provider event once; True when it changed a workspace. An event for no workspace of
    this server (another service on the same Stripe account) is recorded and ignored."""
    seen = unscoped(billing_events)
    if (await ctx.conn.execute(seen.select(seen.c.id).where(seen.c.id == event.id))).first() is not None:
        return False
    await ctx.conn.execute(seen.insert({"id": event.id, "kind": event.kind[:80], "received_at": ctx.now}))
    sub = event.subscription
    if sub is None:
        return False
    ws = system_scope(workspaces)
    found = None
    if sub.workspace_id:  # set by our own checkout (metadata): the workspace it was made for
        found = (await ctx.conn.execute(ws.select(ws.c.id).where(ws.c.id == sub.workspace_id))).first()
    if found is None:
        where = ws.c.billing_customer_id == sub.customer_id
        found = (await ctx.conn.execute(ws.select(ws.c.id).where(where))).first()
    if found is None:
        _log.warning("billing_event_for_unknown_workspace", event_id=event.id, kind=event.kind)
        return False
    return await apply_subscription(as_workspace(ctx, workspace_itself(found.id, "billing")), sub)
