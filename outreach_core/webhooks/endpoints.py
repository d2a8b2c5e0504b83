from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok
from outreach_core.webhooks.operations import (
    create_webhook,
    delete_webhook,
    list_webhook_deliveries,
    list_webhooks,
    redeliver_webhook,
    rotate_webhook_secret,
    test_webhook,
    update_webhook,
)
from outreach_core.webhooks.prepare import prepare_test_webhook
from outreach_core.webhooks.rules import ROTATION_OVERLAP
from outreach_core.webhooks.schemas import (
    CreateWebhookIn,
    DeliveriesQuery,
    DeliveryList,
    SecretRotated,
    TestResult,
    UpdateWebhookIn,
    Webhook,
    WebhookCreated,
    WebhookList,
)
from outreach_core.webhooks.store import pending_count


async def _describe_delete(ctx: WorkspaceContext, id: str) -> str:
    url, pending = await pending_count(ctx, id)
    dropped = (
        f" {pending:,} pending deliver{'y is' if pending == 1 else 'ies are'} dropped." if pending else ""
    )
    return f"Delete the webhook endpoint {url} with its delivery log? Nothing more is sent to it.{dropped}"


async def _describe_rotate(ctx: WorkspaceContext, id: str) -> str:
    url, _ = await pending_count(ctx, id)
    hours = int(ROTATION_OVERLAP.total_seconds() // 3600)
    return (
        f"Give {url} a new signing secret? The current one keeps signing alongside it for {hours} hours; "
        "update the receiver before then."
    )


ENDPOINTS = (
    Endpoint("GET", "/webhooks", list_webhooks, WebhookList, read_only=True, tag="webhooks"),
    Endpoint(
        "POST",
        "/webhooks",
        create_webhook,
        WebhookCreated,
        body=CreateWebhookIn,
        role="admin",
        tag="webhooks",
    ),
    Endpoint(
        "POST",
        "/webhooks/deliveries/{id}/redeliver",
        redeliver_webhook,
        Ok,
        role="admin",
        tag="webhooks",
        open_world=True,
        title="Redeliver a webhook delivery",
    ),
    Endpoint(
        "PATCH",
        "/webhooks/{id}",
        update_webhook,
        Webhook,
        body=UpdateWebhookIn,
        role="admin",
        tag="webhooks",
        destructive=True,
        idempotent=True,
    ),
    Endpoint(
        "DELETE",
        "/webhooks/{id}",
        delete_webhook,
        Ok,
        destructive=True,
        confirm=_describe_delete,
        role="admin",
        tag="webhooks",
        idempotent=True,
    ),
    Endpoint(
        "POST",
        "/webhooks/{id}/test",
        test_webhook,
        TestResult,
        prepare=prepare_test_webhook,
        role="admin",
        tag="webhooks",
        open_world=True,
    ),
    Endpoint(
        "GET",
        "/webhooks/{id}/deliveries",
        list_webhook_deliveries,
        DeliveryList,
        query=DeliveriesQuery,
        read_only=True,
        tag="webhooks",
    ),
    Endpoint(
        "POST",
        "/webhooks/{id}/rotate-secret",
        rotate_webhook_secret,
        SecretRotated,
        confirm=_describe_rotate,
        role="admin",
        tag="webhooks",
        destructive=True,
    ),
)
