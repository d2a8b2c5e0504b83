"""Lead lists: create, rename, delete, and putting leads on and off them (set-based)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func

from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import list_leads, lists
from outreach_core.errors import Conflict, NotFound
from outreach_core.ids import new_id
from outreach_core.lists.schemas import MAX_LISTS, CreateListIn, LeadList, LeadLists, UpdateListIn
from outreach_core.targets.label_triggers import switch_off_list_triggers
from outreach_core.targets.list_members import add_to_list
from outreach_core.targets.schemas import Added, ListTargetIn, Removed
from outreach_core.targets.selection import target_ids
from outreach_core.wire import Ok


async def list_lists(ctx: WorkspaceContext) -> LeadLists:
    """List the workspace's lead lists, oldest first, each with how many leads it holds. Use a list's id
    as `listId` in lead targets, in `list_leads`, or to add imported leads to it."""
    rows = (await ctx.conn.execute(_lists_with_counts(ctx).order_by(lists.c.created_at, lists.c.id))).all()
    return LeadLists(lists=[_item(r) for r in rows])


async def create_list(ctx: WorkspaceContext, body: CreateListIn) -> LeadList:
    """Create an empty lead list. Names are unique in the workspace (1 to 120 characters); a name already
    used gives a conflict. Add leads with `add_leads_to_list` or through an import."""
    return await _create(ctx, body.name.strip())


async def update_list(ctx: WorkspaceContext, id: str, body: UpdateListIn) -> LeadList:
    """Rename a lead list. The new name must not be used by another list of the workspace."""
    await get_list(ctx, id)
    name = body.name.strip()
    await _ensure_name_free(ctx, name, except_id=id)
    ls = scoped(ctx, lists)
    await ctx.conn.execute(ls.update().where(lists.c.id == id).values(name=name))
    return await get_list(ctx, id)


async def delete_list(ctx: WorkspaceContext, id: str) -> Ok:
    """Delete a lead list. The leads on it stay in the workspace (with their other lists, labels and
    campaigns); only their membership of this list goes. A label whose trigger moves leads to this list
    has that trigger switched off."""
    await get_list(ctx, id)
    await switch_off_list_triggers(ctx, id)
    ls = scoped(ctx, lists)
    await ctx.conn.execute(ls.delete().where(lists.c.id == id))
    return Ok()


async def add_leads_to_list(ctx: WorkspaceContext, body: ListTargetIn) -> Added:
    """Put the targeted leads on a list (`listId`). `target` is exactly one of `{"ids": [...]}`,
    `{"listId": "..."}`, `{"filter": {...list_leads filters...}}` or `{"all": true}`. Leads already on the
    list stay as they are and are not counted: `added` is the number newly put on it."""
    await get_list(ctx, body.list_id)
    return Added(added=await add_to_list(ctx, body.list_id, target_ids(ctx, body.target)))


async def remove_leads_from_list(ctx: WorkspaceContext, body: ListTargetIn) -> Removed:
    """Take the targeted leads off a list (`listId`). The leads themselves stay in the workspace. `target`
    is exactly one of `{"ids": [...]}`, `{"listId": "..."}`, `{"filter": {...}}` or `{"all": true}`.
    `removed` counts the leads that were on the list."""
    await get_list(ctx, body.list_id)
    ll = scoped(ctx, list_leads)
    result = await ctx.conn.execute(
        ll.delete().where(
            list_leads.c.list_id == body.list_id, list_leads.c.lead_id.in_(target_ids(ctx, body.target))
        )
    )
    return Removed(removed=int(result.rowcount))


# --- used by other domains ---------------------------------------------------------------------------------


async def get_list(ctx: WorkspaceContext, id: str) -> LeadList:
    """One list with its lead count; 404 when the workspace has no such list."""
    row = (await ctx.conn.execute(_lists_with_counts(ctx).where(lists.c.id == id))).one_or_none()
    if row is None:
        raise NotFound("list", id)
    return _item(row)


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
    created = await _create(ctx, name)
    return created.id, created.name


# --- helpers ---------------------------------------------------------------------------------------------


def _lists_with_counts(ctx: WorkspaceContext) -> Select[Any]:
    """Lists with their lead counts: one grouped count over the workspace's lists, joined once."""
    ls = scoped(ctx, lists)
    ll = scoped(ctx, list_leads)
    counts = (
        ll.select(list_leads.c.list_id, func.count().label("n"))
        .where(list_leads.c.list_id.in_(ls.select(lists.c.id)))
        .group_by(list_leads.c.list_id)
        .subquery()
    )
    return ls.select(
        lists.c.id, lists.c.name, lists.c.created_at, func.coalesce(counts.c.n, 0).label("leads")
    ).outerjoin(counts, counts.c.list_id == lists.c.id)


def _item(row: Any) -> LeadList:
    return LeadList(id=row.id, name=row.name, created_at=row.created_at, leads=row.leads)


async def _create(ctx: WorkspaceContext, name: str) -> LeadList:
    ls = scoped(ctx, lists)
    total = (await ctx.conn.execute(ls.select(func.count()))).scalar_one()
    if total >= MAX_LISTS:
        raise Conflict(
            f"A workspace can have at most {MAX_LISTS} lists; delete one first.", {"limit": MAX_LISTS}
        )
    await _ensure_name_free(ctx, name)
    row = {"id": new_id("list"), "name": name, "created_at": ctx.now}
    await ctx.conn.execute(ls.insert(row))
    return LeadList(id=row["id"], name=name, created_at=ctx.now, leads=0)


async def _ensure_name_free(ctx: WorkspaceContext, name: str, except_id: str | None = None) -> None:
    ls = scoped(ctx, lists)
    stmt = ls.select(lists.c.id).where(lists.c.name == name)
    if except_id is not None:
        stmt = stmt.where(lists.c.id != except_id)
    if (await ctx.conn.execute(stmt)).first() is not None:
        raise Conflict(f"A list named {name!r} exists already.", {"name": name})
