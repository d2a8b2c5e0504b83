"""The transactional outbox: operations record events in their own transaction; delivery reads them later."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import Select, String, func, literal, null

from outreach_core.events.data import iso_z
from outreach_core.kernel.bulk import insert_from_select, row_ids
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, outbox
from outreach_core.kernel.db.types import UtcDateTime
from outreach_core.kernel.ids import new_id

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
    """Write one event in the caller's transaction; it exists only if the change that caused it commits.

    `payload` is the webhook body (DESIGN section 9) and `data` its `data` member: for an event about a
    lead, build it with `outreach_core.events.data.lead_event_data` (docs/webhooks.md)."""
    row = _event_row(ctx, kind, data)
    await ctx.conn.execute(scoped(ctx, outbox).insert(row))
    return str(row["id"])


async def record_events(ctx: WorkspaceContext, events: list[tuple[EventKind, dict[str, Any]]]) -> None:
    """`record_event` for many events at once (one executemany), in their order."""
    if events:
        await ctx.conn.execute(*scoped(ctx, outbox).insert_many([_event_row(ctx, k, d) for k, d in events]))


def _event_row(ctx: WorkspaceContext, kind: EventKind, data: dict[str, Any]) -> dict[str, Any]:
    event_id = new_id("evt")
    payload = {
        "id": event_id,
        "type": kind,
        "createdAt": iso_z(ctx.now),
        "workspaceId": ctx.workspace_id,
        "test": False,
        "data": data,
    }
    return {"id": event_id, "kind": kind, "payload": payload, "created_at": ctx.now}


async def record_lead_events(
    ctx: WorkspaceContext, kind: EventKind, lead_ids: Select[Any], extra: dict[str, Any]
) -> int:
    """One event per lead in the sub-select `lead_ids`, built and inserted in one statement (no id lists in
    Python): `data` is the shape of `event_data.lead_event_data` with no campaign, thread, step or variant,
    plus `extra` (JSON values: text, numbers, booleans, null, objects). Returns how many events were
    written."""
    postgres = ctx.conn.dialect.name == "postgresql"
    build = func.jsonb_build_object if postgres else func.json_object
    event_id = row_ids("evt", leads.c.id)
    lead = build(
        *(literal("id"), leads.c.id, literal("email"), leads.c.email),
        *(literal("firstName"), leads.c.first_name, literal("lastName"), leads.c.last_name),
        *(literal("company"), leads.c.company, literal("status"), leads.c.status),
    )
    data_pairs: list[Any] = [literal("lead"), lead]
    for key in ("campaign", "thread", "step", "variant"):
        data_pairs += [literal(key), null()]
    for key, value in extra.items():
        data_pairs += [literal(key), _json_value(value, postgres)]
    payload = build(
        literal("id"),
        event_id,
        literal("type"),
        literal(kind),
        literal("createdAt"),
        literal(iso_z(ctx.now)),
        literal("workspaceId"),
        literal(ctx.workspace_id),
        literal("test"),
        _json_value(False, postgres),
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


def _json_value(value: Any, postgres: bool) -> Any:
    """A JSON value as an SQL expression for `json_object` / `jsonb_build_object` (SQLite has no boolean
    type: `true`/`false` must come from `json()`, or they would be stored as 1/0)."""
    if value is None:
        return null()
    if isinstance(value, bool):
        return literal(value) if postgres else func.json("true" if value else "false")
    if isinstance(value, dict):
        build = func.jsonb_build_object if postgres else func.json_object
        pairs: list[Any] = []
        for key, item in value.items():
            pairs += [literal(key), _json_value(item, postgres)]
        return build(*pairs)
    if isinstance(value, str):
        return literal(value, String)
    return literal(value)
