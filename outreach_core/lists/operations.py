"""Lead lists: create, rename, delete, and putting leads on and off them (set-based)."""

from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import list_leads, lists
from outreach_core.kernel.wire import Ok
from outreach_core.lists.schemas import CreateListIn, LeadList, LeadLists, UpdateListIn
from outreach_core.lists.store import create_named, ensure_name_free, get_list, list_item, lists_with_counts
from outreach_core.targets.label_triggers import switch_off_list_triggers
from outreach_core.targets.list_members import add_to_list
from outreach_core.targets.schemas import Added, ListTargetIn, Removed
from outreach_core.targets.selection import target_ids


async def list_lists(ctx: WorkspaceContext) -> LeadLists:
    """List the workspace's lead lists, oldest first, each with how many leads it holds. Use a list's id
    as `listId` in lead targets, in `list_leads`, or to add imported leads to it."""
    rows = (await ctx.conn.execute(lists_with_counts(ctx).order_by(lists.c.created_at, lists.c.id))).all()
    return LeadLists(lists=[list_item(r) for r in rows])


async def create_list(ctx: WorkspaceContext, body: CreateListIn) -> LeadList:
    """Create an empty lead list. Names are unique in the workspace (1 to 120 characters); a name already
    used gives a conflict. Add leads with `add_leads_to_list` or through an import."""
    return await create_named(ctx, body.name.strip())


async def update_list(ctx: WorkspaceContext, id: str, body: UpdateListIn) -> LeadList:
    """Rename a lead list. The new name must not be used by another list of the workspace."""
    await get_list(ctx, id)
    name = body.name.strip()
    await ensure_name_free(ctx, name, except_id=id)
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
