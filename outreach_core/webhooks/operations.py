"""Webhook endpoints: list, create (secret shown once), change, delete, test, deliveries, redeliver, rotate.

Reads are open to every member; every write, the test and redelivery need the owner or admin role. Signing
secrets are stored encrypted (`outreach_core.kernel.crypto`, key rotation) and never appear in a response
after the one that creates them. `test_webhook` POSTs outside any transaction (its `prepare` step). The worker
side of delivery is `outreach_core.webhooks.delivery`; docs/webhooks.md describes both.
"""

from __future__ import annotations

import secrets as random_secrets
from collections import defaultdict
from typing import Any

from sqlalchemy import func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.crypto import encrypt
from outreach_core.kernel.db.tables import webhook_attempts, webhook_deliveries, webhooks
from outreach_core.kernel.errors import Conflict, InvalidInput, InvalidState, NotFound
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.wire import Ok
from outreach_core.webhooks import rules
from outreach_core.webhooks.delivery import parse_body
from outreach_core.webhooks.schemas import (
    CreateWebhookIn,
    DeliveriesQuery,
    Delivery,
    DeliveryList,
    EventType,
    SecretRotated,
    TestResult,
    Try,
    UpdateWebhookIn,
    Webhook,
    WebhookCreated,
    WebhookList,
)
from outreach_core.webhooks.store import webhook_row

d = webhook_deliveries


async def list_webhooks(ctx: WorkspaceContext) -> WebhookList:
    """List the workspace's webhook endpoints, oldest first, with their delivery counts of the last 7 days
    (delivered, failed, pending), last status, and `disabledReason` when the service turned one off; plus
    `events`, the event kinds an endpoint can subscribe to. Signing secrets are never listed."""
    rows = (
        await ctx.conn.execute(scoped(ctx, webhooks).select().order_by(webhooks.c.created_at, webhooks.c.id))
    ).all()
    counts = await _counts(ctx, [r.id for r in rows])
    return WebhookList(
        webhooks=[_webhook(r, counts.get(r.id, {})) for r in rows],
        events=[EventType(type=kind, description=text) for kind, text in rules.EVENT_CATALOGUE],
    )


async def create_webhook(ctx: WorkspaceContext, body: CreateWebhookIn) -> WebhookCreated:
    """Register an endpoint that receives the chosen event kinds as signed JSON POSTs (owners and admins).
    The URL must be https. Returns the signing secret once: store it to verify the `Service-Signature`
    header (docs/webhooks.md has a short verification snippet). At most 20 endpoints per workspace."""
    _check_url(ctx, body.url)
    total = (await ctx.conn.execute(scoped(ctx, webhooks).select(func.count()))).scalar_one()
    if total >= rules.MAX_WEBHOOKS:
        raise Conflict(
            f"A workspace has at most {rules.MAX_WEBHOOKS} webhook endpoints; delete one first.",
            {"limit": rules.MAX_WEBHOOKS},
        )
    secret = _new_secret()
    hook_id = new_id("whk")
    await ctx.conn.execute(
        scoped(ctx, webhooks).insert(
            {
                "id": hook_id,
                "url": body.url,
                "description": body.description,
                "events": list(body.events),
                "enabled": True,
                "secret_encrypted": encrypt(ctx.settings, secret, rules.SECRET_PURPOSE),
                "failed_attempts": 0,
                "created_at": ctx.now,
                "updated_at": ctx.now,
            }
        )
    )
    return WebhookCreated(webhook=await _get(ctx, hook_id), secret=secret)


async def update_webhook(ctx: WorkspaceContext, id: str, body: UpdateWebhookIn) -> Webhook:
    """Change an endpoint's URL, description, event kinds or enabled state (owners and admins); fields left
    out stay; `description: null` clears it (null is refused for the other fields). `enabled: true` turns it
    on again and clears its failure count and `disabledReason`; `enabled: false` turns it off: nothing more
    is sent to it and its pending deliveries fail (redeliver them once it is on again)."""
    row = await webhook_row(ctx, id)
    values: dict[str, Any] = {}
    if body.url is not None:
        _check_url(ctx, body.url)
        values["url"] = body.url
    if "description" in body.model_fields_set:
        values["description"] = body.description
    if body.events is not None:
        values["events"] = list(body.events)
    if body.enabled is True:
        values |= {"enabled": True, "disabled_reason": None, "failed_attempts": 0, "failing_since": None}
    elif body.enabled is False and row.enabled:
        values |= {"enabled": False, "disabled_reason": None}
        await _fail_pending(ctx, id, "not sent: the endpoint was turned off.")
    if values:
        values["updated_at"] = ctx.now
        await ctx.conn.execute(scoped(ctx, webhooks).update().where(webhooks.c.id == id).values(**values))
    return await _get(ctx, id)


async def delete_webhook(ctx: WorkspaceContext, id: str) -> Ok:
    """Delete an endpoint for good (owners and admins), with its delivery log; pending deliveries are
    dropped and nothing more is sent to it."""
    await webhook_row(ctx, id)
    await ctx.conn.execute(scoped(ctx, webhooks).delete().where(webhooks.c.id == id))
    return Ok()


async def test_webhook(ctx: WorkspaceContext, id: str, prepared: TestResult) -> TestResult:
    """Send a signed sample `lead.replied` event marked `test: true` to the endpoint now and return its
    answer: `delivered`, `status` (0 when it did not answer), `error`, `body` and `ms` (owners and
    admins). It is not retried and not kept in the delivery log; a turned-off endpoint can be tested too."""
    await webhook_row(ctx, id)
    return prepared


async def list_webhook_deliveries(ctx: WorkspaceContext, id: str, query: DeliveriesQuery) -> DeliveryList:
    """The endpoint's deliveries of the last 30 days, newest first (`limit`, default 50, at most 200): each
    with its status (pending, delivered, failed), the payload as sent and every attempt (`tries`: time,
    HTTP status or 0 for no answer, duration, error). Use `redeliver_webhook` to send one again."""
    await webhook_row(ctx, id)
    rows = (
        await ctx.conn.execute(
            scoped(ctx, d)
            .select()
            .where(d.c.webhook_id == id, d.c.created_at >= ctx.now - rules.KEEP_DELIVERIES)
            .order_by(d.c.created_at.desc(), d.c.id.desc())
            .limit(query.limit)
        )
    ).all()
    tries: dict[str, list[Try]] = defaultdict(list)
    if rows:
        found = await ctx.conn.execute(
            scoped(ctx, webhook_attempts)
            .select()
            .where(webhook_attempts.c.delivery_id.in_([r.id for r in rows]))
            .order_by(webhook_attempts.c.at, webhook_attempts.c.id)
        )
        for t in found:
            tries[t.delivery_id].append(Try(at=t.at, status=t.status, ms=t.ms, error=t.error))
    return DeliveryList(deliveries=[_delivery(r, tries.get(r.id, [])) for r in rows])


async def redeliver_webhook(ctx: WorkspaceContext, id: str) -> Ok:
    """Queue a delivery (`id` from `list_webhook_deliveries`) to be sent again with a fresh set of retries
    (owners and admins): a failed one, or a delivered one the receiver wants again. It keeps its event id,
    so a receiver that dedupes by `Service-Event-Id` sees the same event. Refused while it is still pending
    or while its endpoint is turned off."""
    row = (await ctx.conn.execute(scoped(ctx, d).select().where(d.c.id == id))).one_or_none()
    if row is None:
        raise NotFound("delivery", id)
    if row.status == "pending":
        raise InvalidState(
            "This delivery is still being tried; wait for it to finish.", {"status": "pending"}
        )
    hook = await webhook_row(ctx, row.webhook_id)
    if not hook.enabled:
        raise InvalidState(
            "The endpoint is turned off; turn it on (update_webhook with enabled: true) first.",
            {"webhookId": hook.id},
        )
    await ctx.conn.execute(
        scoped(ctx, d)
        .update()
        .where(d.c.id == id)
        .values(
            status="pending",
            round_attempts=0,
            next_attempt_at=ctx.now,
            claimed_until=None,
            delivered_at=None,
        )
    )
    return Ok()


async def rotate_webhook_secret(ctx: WorkspaceContext, id: str) -> SecretRotated:
    """Give the endpoint a new signing secret, returned once (owners and admins). For 24 hours every
    request is signed with both the new and the previous secret (`Service-Signature: t=...,v1=<new>,
    v1=<previous>`), so the receiver can switch without losing events; then only the new one signs."""
    row = await webhook_row(ctx, id)
    secret = _new_secret()
    until = ctx.now + rules.ROTATION_OVERLAP
    await ctx.conn.execute(
        scoped(ctx, webhooks)
        .update()
        .where(webhooks.c.id == id)
        .values(
            secret_encrypted=encrypt(ctx.settings, secret, rules.SECRET_PURPOSE),
            previous_secret_encrypted=row.secret_encrypted,
            previous_secret_until=until,
            updated_at=ctx.now,
        )
    )
    return SecretRotated(secret=secret, previous_valid_until=until)


# --- helpers -----------------------------------------------------------------------------------------------


def _check_url(ctx: WorkspaceContext, url: str) -> None:
    problem = rules.webhook_url_problem(url, allow_private=ctx.settings.allow_private_urls)
    if problem is not None:
        raise InvalidInput.field("url", f"This URL cannot receive webhooks: {problem}.")


def _new_secret() -> str:
    return rules.SECRET_PREFIX + random_secrets.token_urlsafe(32)


async def _get(ctx: WorkspaceContext, id: str) -> Webhook:
    row = await webhook_row(ctx, id)
    return _webhook(row, (await _counts(ctx, [id])).get(id, {}))


async def _counts(ctx: WorkspaceContext, ids: list[str]) -> dict[str, dict[str, int]]:
    """Deliveries of the last 7 days by endpoint and status, counted on the (webhook, created) index."""
    if not ids:
        return {}
    rows = await ctx.conn.execute(
        scoped(ctx, d)
        .select(d.c.webhook_id, d.c.status, func.count())
        .where(d.c.webhook_id.in_(ids), d.c.created_at >= ctx.now - rules.COUNT_WINDOW)
        .group_by(d.c.webhook_id, d.c.status)
    )
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for hook_id, status, n in rows:
        out[hook_id][status] = int(n)
    return out


async def _fail_pending(ctx: WorkspaceContext, id: str, error: str) -> None:
    await ctx.conn.execute(
        scoped(ctx, d)
        .update()
        .where(d.c.webhook_id == id, d.c.status == "pending")
        .values(status="failed", next_attempt_at=None, claimed_until=None, last_error=error)
    )


def _webhook(row: Any, counts: dict[str, int]) -> Webhook:
    return Webhook.from_row(
        row,
        events=list(row.events),
        delivered=counts.get("delivered", 0),
        failed=counts.get("failed", 0),
        pending=counts.get("pending", 0),
    )


def _delivery(row: Any, tries: list[Try]) -> Delivery:
    return Delivery.from_row(
        row,
        next_attempt_at=row.next_attempt_at if row.status == "pending" else None,
        payload=parse_body(row.body),
        tries=tries,
    )
