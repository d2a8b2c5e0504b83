from __future__ import annotations

from typing import Any

from outreach_core.context import WorkspaceContext
from outreach_core.interface import Endpoint
from outreach_core.webhooks.operations import (
    create_webhook,
    delete_webhook,
    list_webhook_deliveries,
    list_webhooks,
    pending_count,
    prepare_test_webhook,
    redeliver_webhook,
    rotate_webhook_secret,
    test_webhook,
    update_webhook,
)
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
from outreach_core.wire import Ok


async def _describe_delete(ctx: WorkspaceContext, args: dict[str, Any]) -> str:
    url, pending = await pending_count(ctx, str(args.get("id")))
    dropped = (
        f" {pending:,} pending deliver{'y is' if pending == 1 else 'ies are'} dropped." if pending else ""
    )
    return f"Delete the webhook endpoint {url} with its delivery log? Nothing more is sent to it.{dropped}"


async def _describe_rotate(ctx: WorkspaceContext, args: dict[str, Any]) -> str:
    url, _ = await pending_count(ctx, str(args.get("id")))
    hours = int(ROTATION_OVERLAP.total_seconds() // 3600)
    return (
        f"Give {url} a new signing secret? The current one keeps signing alongside it for {hours} hours; "
        "update the receiver before then."
    )


ENDPOINTS = [
    Endpoint(
        "GET", "/webhooks", list_webhooks, WebhookList, tool="list_webhooks", read_only=True, tag="webhooks"
    ),
    Endpoint(
        "POST",
        "/webhooks",
        create_webhook,
        WebhookCreated,
        body=CreateWebhookIn,
        tool="create_webhook",
        tag="webhooks",
    ),
    Endpoint(
        "POST",
        "/webhooks/deliveries/{id}/redeliver",
        redeliver_webhook,
        Ok,
        tool="redeliver_webhook",
        tag="webhooks",
    ),
    Endpoint(
        "PATCH",
        "/webhooks/{id}",
        update_webhook,
        Webhook,
        body=UpdateWebhookIn,
        tool="update_webhook",
        tag="webhooks",
    ),
    Endpoint(
        "DELETE",
        "/webhooks/{id}",
        delete_webhook,
        Ok,
        tool="delete_webhook",
        destructive=True,
        confirm=_describe_delete,
        tag="webhooks",
    ),
    Endpoint(
        "POST",
        "/webhooks/{id}/test",
        test_webhook,
        TestResult,
        tool="test_webhook",
        prepare=prepare_test_webhook,
        tag="webhooks",
    ),
    Endpoint(
        "GET",
        "/webhooks/{id}/deliveries",
        list_webhook_deliveries,
        DeliveryList,
        query=DeliveriesQuery,
        tool="list_webhook_deliveries",
        read_only=True,
        tag="webhooks",
    ),
    Endpoint(
        "POST",
        "/webhooks/{id}/rotate-secret",
        rotate_webhook_secret,
        SecretRotated,
        tool="rotate_webhook_secret",
        confirm=_describe_rotate,
        tag="webhooks",
    ),
]
