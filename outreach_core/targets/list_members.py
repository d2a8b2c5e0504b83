"""What the other lead domains need from lists: checking a list exists, and putting leads on it (set-based).
The lists domain owns lists and uses these too."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, exists, literal

from outreach_core.bulk import insert_from_select
from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import leads, list_leads, lists
from outreach_core.db.types import UtcDateTime
from outreach_core.errors import NotFound


async def list_name(ctx: WorkspaceContext, list_id: str) -> str:
    """The name of the workspace's list `list_id`; 404 `not_found` when it has no such list."""
    name = (
        await ctx.conn.execute(scoped(ctx, lists).select(lists.c.name).where(lists.c.id == list_id))
    ).scalar_one_or_none()
    if name is None:
        raise NotFound("list", list_id)
    return str(name)


async def add_to_list(ctx: WorkspaceContext, list_id: str, lead_ids: Select[Any]) -> int:
    """Put the workspace's leads selected by the sub-select `lead_ids` on the list `list_id` (which the
    caller has checked), in one INSERT ... SELECT that skips leads already on it. Returns how many were
    newly added."""
    ld = scoped(ctx, leads)
    ll = scoped(ctx, list_leads)
    source = ld.select(
        literal(list_id, list_leads.c.list_id.type), leads.c.id, literal(ctx.now, UtcDateTime)
    ).where(
        leads.c.id.in_(lead_ids),
        ~exists(
            ll.select(list_leads.c.lead_id).where(
                list_leads.c.list_id == list_id, list_leads.c.lead_id == leads.c.id
            )
        ),
    )
    result = await ctx.conn.execute(
        insert_from_select(ctx, list_leads, ["list_id", "lead_id", "added_at"], source)
    )
    return int(result.rowcount)
