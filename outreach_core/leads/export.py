"""The leads of a workspace (or of one list) as CSV rows, read in batches by id (`outreach leads export`).

Keyset pages (`id > after`, ordered by id) so that a million leads cost a million rows read once, not the
quadratic cost of deeper and deeper offsets. Custom fields become columns: their keys are gathered first
(`custom_keys`), so that the header row can name every one."""

from __future__ import annotations

from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, list_leads, lists
from outreach_core.kernel.errors import NotFound

EXPORT_BATCH = 5_000
COLUMNS: tuple[tuple[str, str], ...] = (
    ("email", "email"),
    ("firstName", "first_name"),
    ("lastName", "last_name"),
    ("company", "company"),
    ("title", "title"),
    ("website", "website"),
    ("phone", "phone"),
    ("linkedin", "linkedin"),
    ("country", "country"),
    ("timezone", "timezone"),
    ("status", "status"),
    ("verifyStatus", "verify_status"),
    ("esp", "esp"),
    ("createdAt", "created_at"),
)
"""CSV header -> lead column, in the file's order (the names `import_leads` reads back)."""


async def list_id_named(ctx: WorkspaceContext, name: str) -> str:
    """The id of the workspace's list called `name` (404 when there is none)."""
    table = scoped(ctx, lists)
    found = (await ctx.conn.execute(table.select(lists.c.id).where(lists.c.name == name))).first()
    if found is None:
        raise NotFound("list", name)
    return str(found.id)


def _selected(ctx: WorkspaceContext, list_id: str | None, *columns: Any) -> Any:
    table = scoped(ctx, leads)
    query = table.select(*columns)
    if list_id is not None:
        members = scoped(ctx, list_leads)
        query = query.where(
            leads.c.id.in_(members.select(list_leads.c.lead_id).where(list_leads.c.list_id == list_id))
        )
    return query


async def custom_keys(ctx: WorkspaceContext, list_id: str | None) -> list[str]:
    """Every custom field key of the exported leads, in the order first met."""
    keys: dict[str, None] = {}
    after = ""
    while True:
        query = _selected(ctx, list_id, leads.c.id, leads.c.custom)
        rows = (
            await ctx.conn.execute(query.where(leads.c.id > after).order_by(leads.c.id).limit(EXPORT_BATCH))
        ).all()
        for row in rows:
            keys.update(dict.fromkeys(row.custom or {}))
        if len(rows) < EXPORT_BATCH:
            return list(keys)
        after = rows[-1].id


async def export_batch(
    ctx: WorkspaceContext, list_id: str | None, after: str, custom: list[str]
) -> tuple[list[list[str]], str | None]:
    """Up to `EXPORT_BATCH` leads with an id above `after` as CSV cells (the `COLUMNS`, then `custom`), and
    the id to continue after (None when this was the last batch)."""
    wanted = [leads.c[column] for _, column in COLUMNS]
    query = _selected(ctx, list_id, leads.c.id, leads.c.custom, *wanted)
    rows = (
        await ctx.conn.execute(query.where(leads.c.id > after).order_by(leads.c.id).limit(EXPORT_BATCH))
    ).all()
    cells: list[list[str]] = []
    for row in rows:
        values = row._mapping
        line = [_text(values[column]) for _, column in COLUMNS]
        own = row.custom or {}
        line.extend(_text(own.get(key)) for key in custom)
        cells.append(line)
    return cells, (rows[-1].id if len(rows) == EXPORT_BATCH else None)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
