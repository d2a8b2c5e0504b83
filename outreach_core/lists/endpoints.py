from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok
from outreach_core.lists.operations import (
    add_leads_to_list,
    create_list,
    delete_list,
    list_lists,
    remove_leads_from_list,
    update_list,
)
from outreach_core.lists.schemas import CreateListIn, LeadList, LeadLists, UpdateListIn
from outreach_core.lists.store import get_list
from outreach_core.targets.label_triggers import labels_moving_to
from outreach_core.targets.schemas import Added, ListTargetIn, Removed


def _leads(n: int) -> str:
    return f"{n:,} lead{'' if n == 1 else 's'}"


async def _describe_delete(ctx: WorkspaceContext, id: str) -> str:
    found = await get_list(ctx, id)
    text = (
        f"Delete the list “{found.name}”? It holds {_leads(found.leads)}; they stay in the workspace, "
        "only their membership of this list goes."
    )
    movers = await labels_moving_to(ctx, found.id)
    if movers:
        names = ", ".join(f"“{n}”" for n in movers)
        text += f" The move-to-list trigger of {names} is switched off."
    return text


ENDPOINTS = (
    Endpoint("GET", "/lists", list_lists, LeadLists, read_only=True, tag="lists"),
    Endpoint("POST", "/lists", create_list, LeadList, body=CreateListIn, tag="lists"),
    Endpoint(
        "PATCH",
        "/lists/{id}",
        update_list,
        LeadList,
        body=UpdateListIn,
        tag="lists",
        destructive=True,
        idempotent=True,
    ),
    Endpoint(
        "DELETE",
        "/lists/{id}",
        delete_list,
        Ok,
        destructive=True,
        confirm=_describe_delete,
        tag="lists",
        idempotent=True,
    ),
    Endpoint(
        "POST",
        "/leads/lists/add",
        add_leads_to_list,
        Added,
        body=ListTargetIn,
        tag="leads",
        idempotent=True,
    ),
    Endpoint(
        "POST",
        "/leads/lists/remove",
        remove_leads_from_list,
        Removed,
        body=ListTargetIn,
        destructive=True,
        tag="leads",
        idempotent=True,
    ),
)
