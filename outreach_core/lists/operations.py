"""Lead lists: create, rename, delete, and putting leads on and off them (set-based)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, exists, func, literal

from outreach_core.bulk import insert_from_select
from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import labels, leads, list_leads, lists
from outreach_core.db.types import UtcDateTime
from outreach_core.errors import Conflict, NotFound
from outreach_core.ids import new_id
from outreach_core.labels.rules import without_list
from outreach_core.leads.schemas import Added, ListTargetIn, Removed
from outreach_core.leads.targets import target_ids
from outreach_core.lists.schemas import MAX_LISTS, CreateListIn, LeadList, LeadLists, UpdateListIn
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
    await _switch_off_move_triggers(ctx, id)
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


async def list_lead_count(ctx: WorkspaceContext, list_id: str) -> int:
    ll = scoped(ctx, list_leads)
    count = (
        await ctx.conn.execute(ll.select(func.count()).where(list_leads.c.list_id == list_id))
    ).scalar_one()
    return int(count)


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


async def _switch_off_move_triggers(ctx: WorkspaceContext, list_id: str) -> None:
    """Labels that move leads to a deleted list stop doing so (a workspace has at most a few hundred)."""
    lb = scoped(ctx, labels)
    for label_id, triggers in (await ctx.conn.execute(lb.select(labels.c.id, labels.c.triggers))).all():
        changed = without_list(triggers, list_id)
        if changed is not None:
            await ctx.conn.execute(lb.update().where(labels.c.id == label_id).values(triggers=changed))


async def labels_moving_to(ctx: WorkspaceContext, list_id: str) -> list[str]:
    """Names of the labels whose move-to-list trigger points at `list_id`."""
    lb = scoped(ctx, labels)
    rows = (await ctx.conn.execute(lb.select(labels.c.name, labels.c.triggers).order_by(labels.c.name))).all()
    return [name for name, triggers in rows if without_list(triggers, list_id) is not None]
