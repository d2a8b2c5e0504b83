"""Billing with `OUTREACH_BILLING=local`: nobody pays; plans are recorded on the service's own pages.

`start_checkout` and `open_billing_portal` answer with the URL of a small page this server serves
(`/billing/local/checkout/<token>`, `/billing/local/portal/<token>`, see `http_api/billing_pages.py`). The
token is signed with the server's secret, names the workspace, the person who asked and (for a checkout)
the plan and interval, and expires after `LINK_TTL`. Opening the page changes nothing; confirming it records
the choice: the plan is in force at once (a new period from that moment, unless a plan billed at the same
interval is in force: its period goes on). The person confirming must
still be an owner or admin of the workspace then. An operator can always set a plan directly with
`outreach plan set` (docs/billing.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from outreach_core.billing.plan import billing_summary, plan_values, renews_at
from outreach_core.billing.rules import PLANS, Interval, effective_status, in_force
from outreach_core.billing.schemas import BillingSummary
from outreach_core.billing.store import billing_row
from outreach_core.kernel.context import Principal, WorkspaceContext, scoped
from outreach_core.kernel.db.tables import members, workspaces
from outreach_core.kernel.errors import Forbidden, InvalidInput, NotFound
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.signing import InvalidSignature, sign, verify

CHECKOUT_PATH = "/billing/local/checkout/"
PORTAL_PATH = "/billing/local/portal/"
LINK_TTL = timedelta(hours=1)
_CHECKOUT = "billing-local-checkout"
_PORTAL = "billing-local-portal"

PortalAction = Literal["change", "cancel", "resume"]


@dataclass(frozen=True)
class LocalLink:
    """What a signed local billing link names: the workspace, who asked, and for a checkout the choice."""

    workspace_id: str
    user_id: str
    plan: str | None = None
    interval: Interval = "month"
    return_to: str = "billing"

    @property
    def principal(self) -> Principal:
        """The person who asked; their role is read again from the workspace when they confirm."""
        return Principal(
            user_id=self.user_id,
            workspace_id=self.workspace_id,
            role="member",
            auth="session",
            credential_id="billing-page",
        )


def checkout_url(ctx: WorkspaceContext, plan: str, interval: Interval, return_to: str) -> str:
    """The local checkout page for `plan` billed every `interval`, for the caller."""
    payload = {"w": ctx.workspace_id, "u": ctx.user_id, "p": plan, "i": interval, "r": return_to}
    token = sign(ctx.settings.resolved_secret_key(), _CHECKOUT, payload, ctx.now + LINK_TTL)
    return f"{ctx.settings.public_url}{CHECKOUT_PATH}{token}"


def portal_url(ctx: WorkspaceContext) -> str:
    """The local billing portal page of the caller's workspace, for the caller."""
    payload = {"w": ctx.workspace_id, "u": ctx.user_id}
    token = sign(ctx.settings.resolved_secret_key(), _PORTAL, payload, ctx.now + LINK_TTL)
    return f"{ctx.settings.public_url}{PORTAL_PATH}{token}"


def read_link(
    settings: Settings, kind: Literal["checkout", "portal"], token: str, now: datetime
) -> LocalLink:
    """The link a token stands for; `NotFound` when it is forged, altered, expired or of the other kind."""
    purpose = _CHECKOUT if kind == "checkout" else _PORTAL
    try:
        data = verify(settings.signing_keys(), purpose, token, now)
        link = LocalLink(
            workspace_id=str(data["w"]),
            user_id=str(data["u"]),
            plan=str(data["p"]) if "p" in data else None,
            interval="year" if data.get("i") == "year" else "month",
            return_to=str(data.get("r", "billing")),
        )
    except (InvalidSignature, KeyError):
        raise NotFound("billing link") from None
    if link.plan is not None and link.plan not in PLANS:
        raise NotFound("billing link")
    return link


@dataclass(frozen=True)
class LocalBillingPage:
    """What a local billing page shows."""

    workspace_name: str
    plan_name: str | None
    interval: str | None
    status: str | None
    renews_at: datetime | None
    cancel_at_period_end: bool


async def describe_local_billing(ctx: WorkspaceContext) -> LocalBillingPage:
    """The workspace's plan as a local billing page shows it (read-only)."""
    row = await billing_row(ctx)
    plan = PLANS.get(row.plan or "")
    return LocalBillingPage(
        workspace_name=row.name,
        plan_name=plan.name if plan else None,
        interval=row.plan_interval,
        status=effective_status(row, ctx.now),
        renews_at=renews_at(row, ctx.now),
        cancel_at_period_end=bool(row.cancel_at_period_end),
    )


async def confirm_local_plan(ctx: WorkspaceContext, plan: str, interval: Interval) -> BillingSummary:
    """Record the plan chosen on a local page, in force at once, the confirming person as the payer. A
    workspace whose plan is in force and billed at the same interval keeps its period (as a paid
    subscription keeps its billing cycle: confirming again never restarts the month's allowances); a new
    plan, or another interval, starts a new period now. Refused unless they are still an owner or admin."""
    await _require_owner_or_admin(ctx)
    row = await billing_row(ctx)
    values = plan_values(plan, interval, ctx.now)
    if in_force(row, ctx.now) is not None and row.plan_interval == interval:
        values.update(plan_period_start=row.plan_period_start, plan_renews_at=renews_at(row, ctx.now))
    await ctx.conn.execute(scoped(ctx, workspaces).update().values(**values, billing_payer_id=ctx.user_id))
    return await billing_summary(ctx, await billing_row(ctx))


async def local_portal_action(
    ctx: WorkspaceContext, action: PortalAction, plan: str | None = None, interval: Interval = "month"
) -> BillingSummary:
    """A change made on the local portal page: another plan (`change`), or cancel at the period's end /
    keep renewing (`cancel` / `resume`). Owners and admins only."""
    if action == "change":
        if plan is None:
            raise InvalidInput.field("plan", "choose a plan")
        return await confirm_local_plan(ctx, plan, interval)
    await _require_owner_or_admin(ctx)
    row = await billing_row(ctx)
    if row.plan is None:
        raise InvalidInput.field("action", "the workspace has no plan to cancel or resume")
    values: dict[str, Any] = {"cancel_at_period_end": action == "cancel"}
    if action == "cancel":
        values["plan_renews_at"] = renews_at(row, ctx.now)  # the end it has now is the end it keeps
    await ctx.conn.execute(scoped(ctx, workspaces).update().values(**values))
    return await billing_summary(ctx, await billing_row(ctx))


async def _require_owner_or_admin(ctx: WorkspaceContext) -> None:
    role = (
        await ctx.conn.execute(
            scoped(ctx, members).select(members.c.role).where(members.c.user_id == ctx.user_id)
        )
    ).scalar_one_or_none()
    if role not in ("owner", "admin"):
        raise Forbidden(
            "Only the workspace's owners and admins can change its plan.",
            {"required": ["owner", "admin"], "role": role},
        )
