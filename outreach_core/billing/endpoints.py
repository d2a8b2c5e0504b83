from __future__ import annotations

from outreach_core.billing.operations import (
    get_billing,
    open_billing_portal,
    set_dedicated_ips,
    start_checkout,
    sync_billing,
)
from outreach_core.billing.prepare import (
    prepare_open_billing_portal,
    prepare_set_dedicated_ips,
    prepare_start_checkout,
    prepare_sync_billing,
)
from outreach_core.billing.schemas import (
    BillingStatus,
    CheckoutIn,
    CheckoutUrl,
    DedicatedIps,
    PortalUrl,
    SetDedicatedIpsIn,
    SyncResult,
)
from outreach_core.kernel.endpoint import Endpoint

ENDPOINTS = (
    Endpoint("GET", "/billing", get_billing, BillingStatus, read_only=True, tag="billing"),
    Endpoint(
        "POST",
        "/billing/checkout",
        start_checkout,
        CheckoutUrl,
        body=CheckoutIn,
        prepare=prepare_start_checkout,
        open_world=True,  # Stripe, with OUTREACH_BILLING=stripe
        role="admin",
        tag="billing",
    ),
    Endpoint(
        "POST",
        "/billing/portal",
        open_billing_portal,
        PortalUrl,
        prepare=prepare_open_billing_portal,
        open_world=True,
        role="admin",
        tag="billing",
    ),
    Endpoint(
        "POST",
        "/billing/sync",
        sync_billing,
        SyncResult,
        prepare=prepare_sync_billing,
        idempotent=True,
        open_world=True,
        role="admin",
        tag="billing",
    ),
    Endpoint(
        "POST",
        "/billing/setDedicatedIps",
        set_dedicated_ips,
        DedicatedIps,
        body=SetDedicatedIpsIn,
        prepare=prepare_set_dedicated_ips,
        idempotent=True,
        open_world=True,
        role="admin",
        tag="billing",
        destructive=True,
    ),
)
