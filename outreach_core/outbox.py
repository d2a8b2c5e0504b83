"""The transactional outbox: operations record events in their own transaction; delivery reads them later."""

from __future__ import annotations

from typing import Any, Literal

from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import outbox
from outreach_core.ids import new_id

EventKind = Literal[
    "lead.replied", "lead.labeled", "lead.bounced", "lead.unsubscribed", "lead.won", "campaign.paused"
]
EVENT_KINDS: tuple[str, ...] = (
    "lead.replied",
    "lead.labeled",
    "lead.bounced",
    "lead.unsubscribed",
    "lead.won",
    "campaign.paused",
)


async def record_event(ctx: WorkspaceContext, kind: EventKind, data: dict[str, Any]) -> str:
    """Write one event in the caller's transaction; it exists only if the change that caused it commits."""
    event_id = new_id("evt")
    await ctx.conn.execute(
        scoped(ctx, outbox).insert(
            {
                "id": event_id,
                "kind": kind,
                "payload": {"id": event_id, "type": kind, "createdAt": ctx.now.isoformat(), "data": data},
                "created_at": ctx.now,
            }
        )
    )
    return event_id
