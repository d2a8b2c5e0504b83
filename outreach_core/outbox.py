"""The transactional outbox: operations record events in their own transaction; delivery reads them later."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import Select, String, func, literal

from outreach_core.bulk import insert_from_select, row_ids
from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import leads, outbox
from outreach_core.db.types import UtcDateTime
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


async def record_lead_events(
    ctx: WorkspaceContext, kind: EventKind, lead_ids: Select[Any], extra: dict[str, str | None]
) -> int:
    """One event per lead in the sub-select `lead_ids`, built and inserted in one statement (no id lists in
    Python): `data` is `{leadId, email, **extra}`. Returns how many events were written."""
    build = func.jsonb_build_object if ctx.conn.dialect.name == "postgresql" else func.json_object
    event_id = row_ids("evt", leads.c.id)
    data_pairs: list[Any] = [literal("leadId"), leads.c.id, literal("email"), leads.c.email]
    for key, value in extra.items():
        data_pairs += [literal(key), literal(value, String)]
    payload = build(
        literal("id"),
        event_id,
        literal("type"),
        literal(kind),
        literal("createdAt"),
        literal(ctx.now.isoformat()),
        literal("data"),
        build(*data_pairs),
    )
    source = (
        scoped(ctx, leads)
        .select(event_id, literal(kind, String), payload, literal(ctx.now, UtcDateTime))
        .where(leads.c.id.in_(lead_ids))
    )
    result = await ctx.conn.execute(
        insert_from_select(ctx, outbox, ["id", "kind", "payload", "created_at"], source)
    )
    return int(result.rowcount)
