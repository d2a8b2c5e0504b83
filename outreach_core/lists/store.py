"""Reading and creating lists: shared by the list operations and endpoints, and by imports (the list an
import puts its leads on)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import lists
from outreach_core.kernel.errors import Conflict, NotFound
from outreach_core.kernel.ids import new_id
from outreach_core.lists.schemas import MAX_LISTS, LeadList
from outreach_core.targets.groups import ensure_name_free as ensure_group_name_free
from outreach_core.targets.list_sizes import list_size


async def get_list(ctx: WorkspaceContext, id: str) -> LeadList:
    """One list with its lead count; 404 when the workspace has no such list."""
    row = (await ctx.conn.execute(lists_with_counts(ctx).where(lists.c.id == id))).one_or_none()
    if row is None:
        raise NotFound("list", id)
    return list_item(row)


async def resolve_import_list(
    ctx: WorkspaceContext, list_id: str | None, name: str | None
) -> tuple[str, str]:
    """The list an import puts its leads on, as `(id, name)`: an existing list by id (404 when unknown), or
    by name the existing list of that name, else a new one."""
    if list_id is not None:
        found = await get_list(ctx, list_id)
        return found.id, found.name
    if name is None or not name.strip():
        raise ValueError("resolve_import_list needs a list id or a name")
    name = name.strip()
    ls = scoped(ctx, lists)
    existing = (
        await ctx.conn.execute(ls.select(lists.c.id).where(lists.c.name == name))
    ).scalar_one_or_none()
    if existing is not None:
        return str(existing), name
    created = await create_named(ctx, name)
    return created.id, created.name


async def create_named(ctx: WorkspaceContext, name: str) -> LeadList:
    ls = scoped(ctx, lists)
    total = (await ctx.conn.execute(ls.select(func.count()))).scalar_one()
    if total >= MAX_LISTS:
        raise Conflict(
            f"A workspace can have at most {MAX_LISTS} lists; delete one first.", {"limit": MAX_LISTS}
        )
    await ensure_name_free(ctx, name)
    row = {"id": new_id("list"), "name": name, "created_at": ctx.now}
    await ctx.conn.execute(ls.insert(row))
    return LeadList(id=row["id"], name=name, created_at=ctx.now, leads=0)


def list_item(row: Any) -> LeadList:
    return LeadList.from_row(row)


def lists_with_counts(ctx: WorkspaceContext) -> Select[Any]:
    """The workspace's lists with `leads`, how many leads each holds: the count kept per list
    (`targets.list_sizes`), no membership counted."""
    return scoped(ctx, lists).select(
        lists.c.id, lists.c.name, lists.c.created_at, list_size(ctx).label("leads")
    )


async def ensure_name_free(ctx: WorkspaceContext, name: str, except_id: str | None = None) -> None:
    await ensure_group_name_free(ctx, lists, "list", name, except_id)
