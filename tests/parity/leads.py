"""REST/MCP parity cases of leads."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Prepare,
    parity_lead,
    unique,
)


async def list_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    await parity_lead(http, ws)
    return [{}, {"search": "parity", "sort": "email", "dir": "asc"}, {"pageSize": 5}, {"status": ["won"]}]


async def lead_stats_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{}, {"listId": "list_missing"}]


async def get_lead_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await parity_lead(http, ws)}, {"id": "lead_missing"}]


async def create_lead_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"email": f"p{next(unique)}@parity.test", "custom": {"k": 1}}, {"email": "bad"}]


async def update_lead_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [
        {"id": await parity_lead(http, ws), "title": "CEO", "status": "interested"},
        {"id": "lead_missing"},
    ]


async def mark_won_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await parity_lead(http, ws), "value": 99.5}, {"id": "lead_missing"}]


async def delete_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [
        {"target": {"ids": [await parity_lead(http, ws)]}, "confirm": True},
        {"target": {}, "confirm": True},
    ]


CASES: dict[str, Prepare] = {
    "list_leads": list_leads_args,
    "get_lead_stats": lead_stats_args,
    "get_lead": get_lead_args,
    "create_lead": create_lead_args,
    "update_lead": update_lead_args,
    "mark_won": mark_won_args,
    "delete_leads": delete_leads_args,
}
