"""Who may do what with webhooks (owners and admins write; everyone reads), through both doors, and no
workspace can see or touch another's endpoints or deliveries through any route or tool."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.doors import call_mcp, call_rest
from tests.webhooks.helpers import seed_delivery

Setup = Callable[[httpx.AsyncClient, WorkspaceHandle], Awaitable[dict[str, Any]]]


async def _hook(http: httpx.AsyncClient, owner: WorkspaceHandle) -> str:
    body = {"url": "https://crm.roles.example.com/in", "events": ["lead.won"]}
    response = await http.post("/api/v1/webhooks", headers=owner.headers, json=body)
    assert response.status_code == 200, response.text
    return str(response.json()["webhook"]["id"])


async def creation(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    return {"url": "https://crm.roles.example.com/in", "events": ["lead.won"]}


async def change(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    return {"id": await _hook(http, owner), "enabled": False}


async def deletion(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    return {"id": await _hook(http, owner), "confirm": True}


async def sample_post(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    return {"id": await _hook(http, owner)}


async def redelivery(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    return {"id": await seed_delivery(owner, await _hook(http, owner), "failed")}


async def rotation(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    return {"id": await _hook(http, owner), "confirm": True}


async def listing(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    await _hook(http, owner)
    return {}


async def delivery_log(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    hook = await _hook(http, owner)
    await seed_delivery(owner, hook, "failed")
    return {"id": hook}


WRITERS = {"owner", "admin"}
EVERYONE = {"owner", "admin", "member"}
MATRIX: list[tuple[str, Setup, set[str]]] = [
    ("create_webhook", creation, WRITERS),
    ("update_webhook", change, WRITERS),
    ("delete_webhook", deletion, WRITERS),
    ("test_webhook", sample_post, WRITERS),
    ("redeliver_webhook", redelivery, WRITERS),
    ("rotate_webhook_secret", rotation, WRITERS),
    ("list_webhooks", listing, EVERYONE),
    ("list_webhook_deliveries", delivery_log, EVERYONE),
]


@pytest.mark.parametrize("door", ["rest", "mcp"])
@pytest.mark.parametrize("role", ["owner", "admin", "member"])
@pytest.mark.parametrize(("tool", "setup", "allowed"), MATRIX, ids=[m[0] for m in MATRIX])
async def test_role_matrix(
    tool: str,
    setup: Setup,
    allowed: set[str],
    role: str,
    door: str,
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    mcp_session: Any,
) -> None:
    owner = await make_workspace()
    caller = owner if role == "owner" else await owner.add_member(role)
    args = await setup(http, owner)
    before = (await http.get("/api/v1/webhooks", headers=owner.headers)).json()
    if door == "rest":
        status, body = await call_rest(http, caller.headers, tool, args)
        failed = status >= 400
    else:
        async with mcp_session(caller.api_key) as client:
            failed, body = await call_mcp(client, tool, args)
        status = 403 if failed and body["error"]["code"] == "forbidden" else (200 if not failed else 0)
    if role in allowed:
        assert not failed, (tool, role, body)
    else:
        assert status == 403 and body["error"]["code"] == "forbidden", (tool, role, body)
        assert "owner or admin" in body["error"]["message"]
        after = (await http.get("/api/v1/webhooks", headers=owner.headers)).json()
        assert after == before  # nothing changed


async def test_workspaces_cannot_reach_each_others_webhooks(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    their_hook = await _hook(http, theirs)
    their_delivery = await seed_delivery(theirs, their_hook, "failed")
    attempts = [
        ("update_webhook", {"id": their_hook, "url": "https://attacker.example.net/in", "enabled": True}),
        ("delete_webhook", {"id": their_hook, "confirm": True}),
        ("test_webhook", {"id": their_hook}),
        ("list_webhook_deliveries", {"id": their_hook}),
        ("rotate_webhook_secret", {"id": their_hook, "confirm": True}),
        ("redeliver_webhook", {"id": their_delivery}),
    ]
    async with mcp_session(mine.api_key) as client:
        for tool, args in attempts:
            status, body = await call_rest(http, mine.headers, tool, args)
            assert status == 404 and body["error"]["code"] == "not_found", (tool, body)
            is_error, mcp_body = await call_mcp(client, tool, args)
            assert is_error and mcp_body["error"]["code"] == "not_found", (tool, mcp_body)
        _, rest_view = await call_rest(http, mine.headers, "list_webhooks", {})
        _, mcp_view = await call_mcp(client, "list_webhooks", {})
        assert rest_view["webhooks"] == mcp_view["webhooks"] == []
        assert their_hook not in str(rest_view) + str(mcp_view)

    # theirs is untouched: same URL, still one failed delivery, not requeued
    [hook] = (await http.get("/api/v1/webhooks", headers=theirs.headers)).json()["webhooks"]
    assert hook["url"] == "https://crm.roles.example.com/in" and hook["enabled"] is True
    [delivery] = (await http.get(f"/api/v1/webhooks/{their_hook}/deliveries", headers=theirs.headers)).json()[
        "deliveries"
    ]
    assert delivery["id"] == their_delivery and delivery["status"] == "failed"
