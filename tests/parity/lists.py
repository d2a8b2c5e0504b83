"""REST/MCP parity cases of lists."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Prepare,
    new_list,
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
