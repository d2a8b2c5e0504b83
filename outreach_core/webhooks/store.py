"""Reads shared by the webhook operations, their pre-transaction step and the doors' confirmations."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import webhook_deliveries, webhooks
from outreach_core.kernel.errors import NotFound


async def webhook_row(ctx: WorkspaceContext, id: str) -> Any:
    """The endpoint `id` of the caller's workspace, or 404 `not_found`."""
    row = (await ctx.conn.execute(scoped(ctx, webhooks).select().where(webhooks.c.id == id))).one_or_none()
    if row is None:
        raise NotFound("webhook", id)
    return row


async def pending_count(ctx: WorkspaceContext, id: str) -> tuple[str, int]:
    """The endpoint's URL and how many of its deliveries are pending (for the confirmations); the id as
    given when there is no such endpoint (the operation itself then answers 404)."""
    row = (await ctx.conn.execute(scoped(ctx, webhooks).select().where(webhooks.c.id == id))).one_or_none()
    if row is None:
        return id, 0
    n = (
        await ctx.conn.execute(
            scoped(ctx, webhook_deliveries)
            .select(func.count())
            .where(webhook_deliveries.c.webhook_id == id, webhook_deliveries.c.status == "pending")
        )
    ).scalar_one()
    return row.url, int(n)
