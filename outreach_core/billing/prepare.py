"""The billing endpoints' pre-transaction steps: calls to the payment provider (Stripe), made with no
transaction open. With local billing they do nothing and return None. The runtime refuses a caller below the
endpoint's role before these run, so nobody without it reaches the provider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from outreach_core.billing.dedicated_ips import check_quantity, dedicated_ips_status
from outreach_core.billing.rules import in_force
from outreach_core.billing.schemas import CheckoutIn, SetDedicatedIpsIn
from outreach_core.billing.store import billing_row
from outreach_core.kernel.context import WorkspaceContext, unscoped
from outreach_core.kernel.db.tables import users
from outreach_core.kernel.endpoint import Outside
from outreach_core.kernel.errors import BillingUnavailable, InvalidState, PlanRequired
from outreach_core.kernel.ports import BillingProvider, BillingProviderError, Subscription
from outreach_core.kernel.settings import Settings

DONE_PATH = "/billing/done"


def provider_enabled(settings: Settings) -> bool:
    """Whether payments go through a provider (OUTREACH_BILLING=stripe)."""
    return settings.billing == "stripe"


@dataclass(frozen=True)
class CheckoutPrepared:
    """A Stripe checkout page to open, or the subscription already moved to the new plan."""

    url: str | None = None
    changed: Subscription | None = None


@dataclass(frozen=True)
class SyncPrepared:
    subscription: Subscription | None


def _provider(outside: Outside) -> BillingProvider | None:
    if not provider_enabled(outside.settings):
        return None
    if outside.ports.billing is None:
        raise BillingUnavailable("Stripe billing is on but not configured: set OUTREACH_STRIPE_API_KEY.")
    return outside.ports.billing


def unavailable(exc: BillingProviderError) -> BillingUnavailable:
    return BillingUnavailable(f"The payment provider did not do it: {exc.reason}")


async def _state(ctx: WorkspaceContext) -> tuple[Any, str]:
    email = (
        await ctx.conn.execute(unscoped(users).select(users.c.email).where(users.c.id == ctx.user_id))
    ).scalar_one_or_none()
    return await billing_row(ctx), str(email or "")


def done_url(settings: Settings, to: str, outcome: str = "done") -> str:
    return f"{settings.public_url}{DONE_PATH}?to={to}&outcome={outcome}"


async def prepare_start_checkout(outside: Outside, *, body: CheckoutIn) -> CheckoutPrepared | None:
    provider = _provider(outside)
    if provider is None:
        return None
    row, email = await outside.read(_state)
    try:
        if row.billing_subscription_id and in_force(row, outside.now()) is not None:
            changed = await provider.change_plan(
                subscription_id=row.billing_subscription_id, plan=body.plan, interval=body.interval
            )
            return CheckoutPrepared(changed=changed)
        url = await provider.checkout(
            workspace_id=outside.principal.workspace_id,
            payer_id=outside.principal.user_id,
            email=email,
            customer_id=row.billing_customer_id,
            plan=body.plan,
            interval=body.interval,
            success_url=done_url(outside.settings, body.return_to),
            cancel_url=done_url(outside.settings, body.return_to, "canceled"),
        )
    except BillingProviderError as exc:
        raise unavailable(exc) from None
    return CheckoutPrepared(url=url)


async def prepare_open_billing_portal(outside: Outside) -> str | None:
    provider = _provider(outside)
    if provider is None:
        return None
    row, _ = await outside.read(_state)
    if not row.billing_customer_id:
        raise InvalidState(
            "The workspace has no subscription yet: start one with POST /api/v1/billing/checkout (tool "
            "start_checkout).",
            {"plan": row.plan},
        )
    try:
        return await provider.portal(
            customer_id=row.billing_customer_id, return_url=done_url(outside.settings, "billing")
        )
    except BillingProviderError as exc:
        raise unavailable(exc) from None


async def prepare_sync_billing(outside: Outside) -> SyncPrepared | None:
    provider = _provider(outside)
    if provider is None:
        return None
    row, email = await outside.read(_state)
    try:
        found = await provider.find(
            workspace_id=outside.principal.workspace_id, customer_id=row.billing_customer_id, email=email
        )
    except BillingProviderError as exc:
        raise unavailable(exc) from None
    return SyncPrepared(found)


async def prepare_set_dedicated_ips(outside: Outside, *, body: SetDedicatedIpsIn) -> Subscription | None:
    provider = _provider(outside)
    if provider is None:
        return None
    row = await outside.read(billing_row)
    if in_force(row, outside.now()) is None or not row.billing_subscription_id:
        raise PlanRequired("Dedicated IP add-ons need an active paid plan.", {"plan": row.plan})
    check_quantity(await outside.read(dedicated_ips_status, row), body.quantity)
    try:
        return await provider.set_dedicated_ips(
            subscription_id=row.billing_subscription_id, quantity=body.quantity, interval=row.plan_interval
        )
    except BillingProviderError as exc:
        raise unavailable(exc) from None
