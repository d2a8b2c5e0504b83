"""What the other lead domains need from lists: checking a list exists, and putting leads on it (set-based).
The lists domain owns lists and uses these too."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, DateTime, Select, bindparam, func, literal

from outreach_core.kernel.bulk import insert_from_select, insert_rows, insert_skipping_duplicates, one_of
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, list_leads, lists
from outreach_core.kernel.db.types import UtcDateTime
from outreach_core.kernel.errors import NotFound


async def list_name(ctx: WorkspaceContext, list_id: str) -> str:
    """The name of the workspace's list `list_id`; 404 `not_found` when it has no such list."""
    name = (
        await ctx.conn.execute(scoped(ctx, lists).select(lists.c.name).where(lists.c.id == list_id))
    ).scalar_one_or_none()
    if name is None:
        raise NotFound("list", list_id)
    return str(name)


async def lock_list(ctx: WorkspaceContext, list_id: str) -> bool:
    """Whether the workspace's list `list_id` exists, holding its row (`FOR KEY SHARE`, PostgreSQL; SQLite
    has one writer at a time) until the transaction ends: the list cannot be deleted before the memberships
    written in it are committed, so the statement deleting it (its trigger, migration 0032) sees them.
    `list_leads` has no foreign keys; every writer of memberships calls this first, once per statement,
    where a foreign key checked the list once per row."""
    found = await ctx.conn.execute(
        scoped(ctx, lists)
        .select(lists.c.id)
        .where(lists.c.id == list_id)
        .with_for_update(read=True, key_share=True)
    )
    return found.first() is not None


async def add_to_list(ctx: WorkspaceContext, list_id: str, lead_ids: Select[Any]) -> int:
    """Put the workspace's leads selected by the sub-select `lead_ids` on the list `list_id` (which the
    caller has checked), in one INSERT ... SELECT that skips leads already on it. Returns how many were
    newly added.

    Leads already on the list are skipped by `ON CONFLICT DO NOTHING` against the primary key (`list_id`,
    `lead_id`): one index probe per lead whatever the planner believes. The `NOT EXISTS` anti-join this
    replaces was planned from statistics, and on a `list_leads` never analysed (autovacuum off, or behind
    an import) PostgreSQL scanned the list once per lead: 24 s for one 5,000-row import part. A list
    deleted since the caller's check: 404 `not_found`."""
    if not await lock_list(ctx, list_id):
        raise NotFound("list", list_id)
    source = _memberships_of(ctx, list_id, leads.c.id.in_(lead_ids))
    result = await ctx.conn.execute(
        insert_from_select(ctx, list_leads, _COLUMNS, source, skip_duplicates=True)
    )
    return int(result.rowcount)


_COLUMNS = ["list_id", "lead_id", "added_at", "lead_created_at"]


def _memberships_of(ctx: WorkspaceContext, list_id: str, which: Any) -> Select[Any]:
    """The `_COLUMNS` of the memberships of the workspace's leads matching `which` on `list_id`, read from
    `leads` (so each keeps its lead's `created_at`)."""
    return (
        scoped(ctx, leads)
        .select(
            literal(list_id, list_leads.c.list_id.type),
            leads.c.id,
            literal(ctx.now, UtcDateTime),
            leads.c.created_at,
        )
        .where(which)
    )


async def add_known_leads_to_list(
    ctx: WorkspaceContext,
    list_id: str,
    lead_ids: Sequence[str],
    created_at: Sequence[datetime] | None = None,
    *,
    created_now: bool = False,
) -> None:
    """Put leads the caller has just read or created in this workspace (their ids) on the list `list_id`
    (which the caller has checked). Each membership keeps its lead's `created_at` (a list's order):
    `created_at` gives them, in the order of `lead_ids`, and the statement reads no other table, so no plan
    depends on statistics (PostgreSQL). Without it (SQLite's merge) one `INSERT ... SELECT` reads them from
    `leads`, a primary-key probe per lead in the database, instead of parsing and formatting a timestamp
    per lead in Python (about 9 µs a row of an `existing: update` import, measured).

    `created_now`: the leads were created in this same transaction and cannot be on a list yet; with
    `created_at` the rows are written as they are (`insert_rows`: a COPY on PostgreSQL). Otherwise a lead
    already on the list is skipped by `ON CONFLICT DO NOTHING` against the primary key: one index probe per
    lead. A list deleted since the caller's check gets no members (an import's list can be deleted while it
    runs)."""
    if not lead_ids or not await lock_list(ctx, list_id):
        return
    if created_at is None:
        source = _memberships_of(ctx, list_id, one_of(ctx, leads.c.id, list(lead_ids)))
        await ctx.conn.execute(
            insert_from_select(ctx, list_leads, _COLUMNS, source, skip_duplicates=not created_now)
        )
        return
    if created_now:
        await insert_rows(ctx, list_leads, _membership_rows(ctx, list_id, lead_ids, created_at))
        return
    if ctx.conn.dialect.name == "postgresql":
        ids = func.unnest(
            bindparam("ids", list(lead_ids), type_=ARRAY(list_leads.c.lead_id.type)),
            # the leads' own times as read (aware): `UtcDateTime`'s conversion of each would cost ~0.6 µs a
            # lead of an `existing: update` import, and asyncpg sends any aware time as UTC itself
            bindparam("created", list(created_at), type_=ARRAY(DateTime(timezone=True))),
        )
        given = ids.table_valued("id", "created_at").render_derived(name="given")
        source = given.select().with_only_columns(
            literal(list_id, list_leads.c.list_id.type),
            given.c.id,
            literal(ctx.now, UtcDateTime),
            given.c.created_at,
        )
        await ctx.conn.execute(insert_from_select(ctx, list_leads, _COLUMNS, source, skip_duplicates=True))
        return
    await ctx.conn.execute(
        insert_skipping_duplicates(ctx, list_leads),
        [
            {**row, "workspace_id": ctx.workspace_id}
            for row in _membership_rows(ctx, list_id, lead_ids, created_at)
        ],
    )


def _membership_rows(
    ctx: WorkspaceContext, list_id: str, lead_ids: Sequence[str], created_at: Sequence[datetime]
) -> list[dict[str, Any]]:
    # built only where written row by row (PostgreSQL's known leads go as two arrays: no dict a lead)
    return [
        {"list_id": list_id, "lead_id": lead_id, "added_at": ctx.now, "lead_created_at": at}
        for lead_id, at in zip(lead_ids, created_at, strict=True)
    ]
