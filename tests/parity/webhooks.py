"""REST/MCP parity cases of the webhook tools, on the session server (no private URLs). Public-looking
names under `.parity.test` do not resolve (the test DNS server answers NXDOMAIN), so `test_webhook` gets
the same "host not found" through both doors."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare
from tests.webhooks.helpers import seed_delivery


async def _hook(http: httpx.AsyncClient, ws: WorkspaceHandle, **body: Any) -> str:
    payload = {"url": "https://hooks.example.org/in", "events": ["lead.won"], **body}
    response = await http.post("/api/v1/webhooks", headers=ws.headers, json=payload)
    assert response.status_code == 200, response.text
    return str(response.json()["webhook"]["id"])


async def list_webhooks_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    hook = await _hook(http, ws, description="listed")
    await seed_delivery(ws, hook, "delivered")
    return [{}]


async def create_webhook_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"url": "https://crm.example.org/in", "events": ["lead.won", "campaign.paused"], "description": "p"},
        {"url": "ftp://crm.example.org/in", "events": ["lead.won"]},
        {"url": "https://10.0.0.1/in", "events": ["lead.won"]},
        {"url": "https://crm.example.org/in", "events": []},
        {"url": "https://crm.example.org/in", "events": ["lead.sold"]},
    ]


async def update_webhook_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    hook = await _hook(http, ws)
    return [
        {"id": hook, "description": "changed", "enabled": False},
        {"id": hook, "enabled": True, "events": ["lead.bounced"]},
        {"id": hook, "url": "http://crm.example.org/in"},
        {"id": "whk_missing", "description": "x"},
    ]


async def delete_webhook_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"id": await _hook(http, ws), "confirm": True}, {"id": "whk_missing", "confirm": True}]


async def test_webhook_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"id": await _hook(http, ws)}, {"id": "whk_missing"}]


async def list_deliveries_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    hook = await _hook(http, ws)
    for status in ("failed", "delivered"):
        await seed_delivery(ws, hook, status)
    return [{"id": hook}, {"id": hook, "limit": 1}, {"id": hook, "limit": 0}, {"id": "whk_missing"}]


async def redeliver_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    hook = await _hook(http, ws)
    failed, pending = await seed_delivery(ws, hook, "failed"), await seed_delivery(ws, hook, "pending")
    return [{"id": failed}, {"id": pending}, {"id": "whd_missing"}]


async def rotate_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"id": await _hook(http, ws), "confirm": True}, {"id": "whk_missing", "confirm": True}]


CASES: dict[str, Prepare] = {
    "list_webhooks": list_webhooks_args,
    "create_webhook": create_webhook_args,
    "update_webhook": update_webhook_args,
    "delete_webhook": delete_webhook_args,
    "test_webhook": test_webhook_args,
    "list_webhook_deliveries": list_deliveries_args,
    "redeliver_webhook": redeliver_args,
    "rotate_webhook_secret": rotate_args,
}


async def their_hook(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await _hook(http, theirs)}]


async def their_hook_listed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    await seed_delivery(theirs, await _hook(http, theirs), "failed")
    return [{}]


async def their_hook_changed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    hook = await _hook(http, theirs)
    return [{"id": hook, "url": "https://attacker.parity-example.org/in", "enabled": False}]


async def their_delivery(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await seed_delivery(theirs, await _hook(http, theirs), "failed")}]


async def their_events(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their endpoint's URL and events, registered here: each workspace has its own endpoints."""
    await _hook(http, theirs)
    return [{"url": "https://hooks.parity-example.org/in", "events": ["lead.won"]}]


FOREIGN: dict[str, Foreign] = {
    "list_webhooks": their_hook_listed,
    "create_webhook": their_events,
    "update_webhook": their_hook_changed,
    "delete_webhook": their_hook,
    "test_webhook": their_hook,
    "list_webhook_deliveries": their_hook,
    "redeliver_webhook": their_delivery,
    "rotate_webhook_secret": their_hook,
}
