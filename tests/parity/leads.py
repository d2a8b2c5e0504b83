"""REST/MCP parity cases of leads."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Args,
    Foreign,
    Prepare,
    foreign_targets,
    new_label,
    new_list,
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


async def their_filters(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    await parity_lead(http, theirs)
    return [{}, {"listId": await new_list(http, theirs)}, {"labelId": await new_label(http, theirs)}]


async def their_list_counted(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    await parity_lead(http, theirs)
    return [{}, {"listId": await new_list(http, theirs)}]


async def their_lead(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await parity_lead(http, theirs)}]


async def their_lead_changed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await parity_lead(http, theirs), "title": "Hijacked", "status": "won"}]


async def their_lead_won(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their lead; my lead won in their campaign."""
    campaign = await http.post("/api/v1/campaigns", headers=theirs.headers, json={"name": "Theirs"})
    return [
        {"id": await parity_lead(http, theirs), "value": 1},
        {"id": await parity_lead(http, mine), "campaignId": campaign.json()["id"]},
    ]


async def their_address_created(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Their lead's address is free here (leads are unique per workspace); their list is not mine."""
    email = f"p{next(unique)}@parity.test"
    created = await http.post("/api/v1/leads", headers=theirs.headers, json={"email": email})
    assert created.status_code == 200, created.text
    return [
        {"email": email},
        {"email": f"p{next(unique)}@parity.test", "listId": await new_list(http, theirs)},
    ]


async def their_leads_deleted(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    return [{"target": target} for target in await foreign_targets(http, theirs)]


FOREIGN: dict[str, Foreign] = {
    "list_leads": their_filters,
    "get_lead_stats": their_list_counted,
    "get_lead": their_lead,
    "create_lead": their_address_created,
    "update_lead": their_lead_changed,
    "mark_won": their_lead_won,
    "delete_leads": their_leads_deleted,
}
