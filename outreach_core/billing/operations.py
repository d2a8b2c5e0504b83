"""Billing operations: the billing status, checkout, the billing portal, syncing with the payment provider,
and dedicated IP add-ons (docs/billing.md).

With `OUTREACH_BILLING=local` checkout and portal answer with this server's own pages (`billing/local.py`);
with `stripe` the provider's hosted pages, through the `BillingProvider` port, called in each endpoint's
pre-transaction step (`billing/prepare.py`) so no transaction waits on Stripe. Changes are for owners and
admins; every member may read the status.
"""

from __future__ import annotations

from outreach_core.billing.ai_allowance import ai_drafts_status
from outreach_core.billing.dedicated_ips import check_quantity, dedicated_ips_status
from outreach_core.billing.local import checkout_url, portal_url
from outreach_core.billing.plan import billing_summary, require_active_plan
from outreach_core.billing.prepare import CheckoutPrepared, SyncPrepared, provider_enabled
from outreach_core.billing.rules import in_force
from outreach_core.billing.schemas import (
    BillingStatus,
    CheckoutIn,
    CheckoutUrl,
    DedicatedIps,
    PortalUrl,
    SetDedicatedIpsIn,
    SyncResult,
)
from outreach_core.billing.store import billing_row
from outreach_core.billing.subscription import apply_subscription
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import workspaces
from outreach_core.kernel.ports import Subscription


async def get_billing(ctx: WorkspaceContext) -> BillingStatus:
    """Show the workspace's plan, this month's usage, the AI draft allowance and dedicated IPs.

    Includes everything of the billing object of GET /me (plan, interval, status, emails a month, contacts,
    emails sent this period, renewsAt, cancelAtPeriodEnd), plus `enabled` (payments go through a provider),
    `payerIsYou`, `aiDrafts` (used, limit, remaining, resetsAt, ownKey, message when used up) and
    `dedicatedIps` (included, addons, inUse, min, max, priceUsd, interval)."""
    row = await billing_row(ctx)
    summary = await billing_summary(ctx, row)
    return BillingStatus(
        **summary.model_dump(),
        enabled=provider_enabled(ctx.settings),
        payer_is_you=row.billing_payer_id is not None and row.billing_payer_id == ctx.user_id,
        ai_drafts=await ai_drafts_status(ctx, row),
        dedicated_ips=await dedicated_ips_status(ctx, row),
    )


async def start_checkout(
    ctx: WorkspaceContext, body: CheckoutIn, prepared: CheckoutPrepared | None
) -> CheckoutUrl:
    """Start moving the workspace to a plan: returns the checkout page to open, or null when done at once.

    `plan` is starter, growth, pro, scale or agency; `interval` month or year. With local billing the page is
    this server's own, where the choice is recorded when confirmed (the link works for an hour). With Stripe
    it is Stripe's checkout; a workspace that already pays moves to the new plan at once (prorated) and `url`
    is null. Owners and admins only."""
    if prepared is None:
        return CheckoutUrl(url=checkout_url(ctx, body.plan, body.interval, body.return_to))
    if prepared.changed is not None:
        await apply_subscription(ctx, prepared.changed)
        return CheckoutUrl(url=None)
    return CheckoutUrl(url=prepared.url)


async def open_billing_portal(ctx: WorkspaceContext, prepared: str | None) -> PortalUrl:
    """Get the billing portal page where the plan, payment method and invoices are managed and the plan
    can be cancelled. With local billing it is this server's own page (the link works for an hour).
    Owners and admins only."""
    return PortalUrl(url=prepared if prepared is not None else portal_url(ctx))


async def sync_billing(ctx: WorkspaceContext, prepared: SyncPrepared | None) -> SyncResult:
    """Fetch the workspace's subscription from the payment provider now and apply it (after a checkout,
    when a webhook may not have arrived yet). With local billing there is nothing to fetch: `found` says
    whether the workspace has a plan in force. Owners and admins only."""
    if prepared is not None:
        if prepared.subscription is not None:
            await apply_subscription(ctx, prepared.subscription)
        return SyncResult(found=prepared.subscription is not None)
    return SyncResult(found=in_force(await billing_row(ctx), ctx.now) is not None)


async def set_dedicated_ips(
    ctx: WorkspaceContext, body: SetDedicatedIpsIn, prepared: Subscription | None
) -> DedicatedIps:
    """Set how many dedicated sending IPs are bought on top of the plan (0 to 50), billed each cycle of the
    plan at `priceUsd` each. Refused with 422 outside `min`..`max` (the IPs in use beyond the included ones
    cannot be given up while in use). Needs an active plan; owners and admins only."""
    await require_active_plan(ctx)
    row = await billing_row(ctx, for_update=True)
    check_quantity(await dedicated_ips_status(ctx, row), body.quantity)
    if prepared is not None:
        await apply_subscription(ctx, prepared)
    else:
        await ctx.conn.execute(scoped(ctx, workspaces).update().values(dedicated_ip_addons=body.quantity))
    return await dedicated_ips_status(ctx, await billing_row(ctx))
