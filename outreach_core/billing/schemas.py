"""Wire models of billing: the billing object of `/me` and `/billing`, and the billing routes' bodies."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from outreach_core.kernel.wire import Timestamp, WireModel

PlanName = Literal["starter", "growth", "pro", "scale", "agency"]
IntervalName = Literal["month", "year"]


class BillingSummary(WireModel):
    """The billing object of GET /me."""

    plan: str | None = Field(
        description="The plan id (starter, growth, pro, scale, agency); null without one."
    )
    plan_name: str | None = Field(description="The plan's display name.")
    interval: Literal["month", "year"] | None = Field(description="How often the plan is billed.")
    status: str | None = Field(
        description="active or trialing while the plan is in force; canceled, past_due ... otherwise."
    )
    emails_per_month: int = Field(description="Emails the plan allows each month (0 without a plan).")
    contacts: int = Field(description="Leads the plan allows in the workspace (0 without a plan).")
    emails_sent_this_period: int = Field(description="Emails counted against this month's allowance.")
    renews_at: Timestamp | None = Field(
        description="When the current billing period ends and the next begins."
    )
    cancel_at_period_end: bool = Field(description="The plan ends at renewsAt instead of renewing.")


class AiDrafts(WireModel):
    """The monthly AI draft allowance: one draft = one write_sequence call or one website draft."""

    used: int = Field(description="Drafts made on the service's AI keys this month.")
    limit: int | None = Field(
        description="Drafts the plan allows a month; null with the workspace's own AI key or without a plan."
    )
    remaining: int | None = Field(description="Drafts left this month; null when there is no limit.")
    resets_at: Timestamp = Field(description="When the count returns to 0.")
    own_key: bool = Field(description="The workspace's own AI key is set: its drafts are not counted.")
    message: str | None = Field(description="Set when the allowance is used up: what to do about it.")


class DedicatedIps(WireModel):
    """Dedicated sending IPs: included in the plan, bought on top, and in use."""

    included: int = Field(description="Dedicated IPs the plan includes.")
    addons: int = Field(description="Dedicated IPs bought on top of the plan.")
    in_use: int = Field(description="Dedicated sending IPs serving the workspace now.")
    min: int = Field(description="Fewest add-ons allowed: the IPs in use beyond the included ones.")
    max: int = Field(description="Most add-ons allowed.")
    price_usd: float = Field(description="Price of one add-on per billing cycle of the plan, in US dollars.")
    interval: Literal["month", "year"] = Field(description="The billing cycle the price is for.")


class BillingStatus(BillingSummary):
    """GET /billing: the billing object of /me plus the provider, the AI draft allowance and dedicated IPs."""

    enabled: bool = Field(
        description="Payments are taken through a payment provider (Stripe); false with local billing, where "
        "plans are recorded on this server's own checkout page or by its operator."
    )
    payer_is_you: bool = Field(description="You are the person who chose and pays for the plan.")
    ai_drafts: AiDrafts
    dedicated_ips: DedicatedIps


class CheckoutIn(WireModel):
    plan: PlanName = Field(description="The plan to move to: starter, growth, pro, scale or agency.")
    interval: IntervalName = Field(description="Billed every month or every year.")
    return_to: Literal["billing", "onboarding"] = Field(
        default="billing", description="Where the person goes back to after the checkout page."
    )


class CheckoutUrl(WireModel):
    url: str | None = Field(
        description="The checkout page to open; null when the change was made at once (an existing paid "
        "subscription moved to another plan)."
    )


class PortalUrl(WireModel):
    url: str = Field(description="The billing portal page to open (plan, payment method, invoices, cancel).")


class SyncResult(WireModel):
    found: bool = Field(description="A subscription was found for the workspace (and its state applied).")


class SetDedicatedIpsIn(WireModel):
    quantity: int = Field(ge=0, le=50, description="Dedicated IP add-ons to hold, 0 to 50.")
