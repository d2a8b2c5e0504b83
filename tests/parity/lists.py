"""REST/MCP parity cases of lists."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Args,
    Foreign,
    Prepare,
    foreign_targets,
    new_list,
    nothing_named,
    parity_name,
    row_lead,
)


async def list_lists_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    list_id = await new_list(http, ws)
    body = {"target": {"ids": [await row_lead(ws)]}, "listId": list_id}
    await http.post("/api/v1/leads/lists/add", headers=ws.headers, json=body)
    return [{}]


async def create_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"name": parity_name()}, {"name": ""}, {"name": "x" * 121}]


async def update_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await new_list(http, ws), "name": parity_name()}, {"id": "list_missing", "name": "x"}]


async def delete_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await new_list(http, ws), "confirm": True}, {"id": "list_missing", "confirm": True}]


async def add_to_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    list_id, lead = await new_list(http, ws), await row_lead(ws)
    return [
        {"target": {"ids": [lead, "lead_missing"]}, "listId": list_id},
        {"target": {"all": True}, "listId": "list_missing"},
        {"target": {}, "listId": list_id},
    ]


async def remove_from_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    list_id, lead = await new_list(http, ws), await row_lead(ws)
    body = {"target": {"ids": [lead]}, "listId": list_id}
    await http.post("/api/v1/leads/lists/add", headers=ws.headers, json=body)
    return [body, {"target": {"all": True}, "listId": "list_missing"}]


CASES: dict[str, Prepare] = {
    "list_lists": list_lists_args,
    "create_list": create_list_args,
    "update_list": update_list_args,
    "delete_list": delete_list_args,
    "add_leads_to_list": add_to_list_args,
    "remove_leads_from_list": remove_from_list_args,
}


async def their_list_name(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """List names are unique per workspace: their list's name is free here."""
    name = parity_name()
    created = await http.post("/api/v1/lists", headers=theirs.headers, json={"name": name})
    assert created.status_code == 200, created.text
    return [{"name": name}]


async def their_list(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await new_list(http, theirs)}]


async def their_list_renamed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await new_list(http, theirs), "name": parity_name()}]


async def their_leads_or_list(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Their leads onto (or off) my list, and all my leads onto (or off) their list."""
    mine_list = await new_list(http, mine)
    await row_lead(mine)
    sets = [{"target": target, "listId": mine_list} for target in await foreign_targets(http, theirs)]
    return [*sets, {"target": {"all": True}, "listId": await new_list(http, theirs)}]


FOREIGN: dict[str, Foreign] = {
    "list_lists": nothing_named,
    "create_list": their_list_name,
    "update_list": their_list_renamed,
    "delete_list": their_list,
    "add_leads_to_list": their_leads_or_list,
    "remove_leads_from_list": their_leads_or_list,
}
