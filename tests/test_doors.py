"""Every MCP tool returns the same JSON as its REST route, and no workspace can see or change another's
data through either door."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.doors import ENDPOINTS, call_mcp, call_rest, normalize

_unique = itertools.count()
Prepare = Callable[[httpx.AsyncClient, WorkspaceHandle], Awaitable[list[dict[str, Any]]]]


async def _new_key(http: httpx.AsyncClient, ws: WorkspaceHandle, name: str = "k") -> dict[str, Any]:
    return (await http.post("/api/v1/apiKeys/create", headers=ws.headers, json={"name": name})).json()  # type: ignore[no-any-return]


async def _member_id(http: httpx.AsyncClient, ws: WorkspaceHandle, user_id: str) -> str:
    members = (await http.get("/api/v1/members", headers=ws.headers)).json()["members"]
    return str(next(m["id"] for m in members if m["userId"] == user_id))


async def _invitation(http: httpx.AsyncClient, ws: WorkspaceHandle, email: str) -> str:
    created = await http.post("/api/v1/invitations", headers=ws.headers, json={"email": email})
    return str(created.json()["id"])


async def no_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{}]


async def create_key_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"name": "parity", "expiresInDays": 30}, {"name": ""}, {"name": "n", "expiresInDays": 400}]


async def revoke_key_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": (await _new_key(http, ws))["id"], "confirm": True}, {"id": "key_missing", "confirm": True}]


async def settings_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"unsubscribeMode": "reply_text"}, {"aiLabels": False}, {}, {"unsubscribeMode": "smoke"}]


async def invitation_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"email": "parity@example.com", "role": "admin"}, {"email": "not-an-email"}]


async def delete_invitation_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    email = f"gone-{next(_unique)}@example.com"
    return [{"id": await _invitation(http, ws, email)}, {"id": "inv_missing"}]


async def update_member_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    member = await ws.add_member("member")
    return [
        {"id": await _member_id(http, ws, member.user_id), "role": "admin"},
        {"id": "mem_missing", "role": "admin"},
    ]


async def remove_member_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    member = await ws.add_member("member")
    return [
        {"id": await _member_id(http, ws, member.user_id), "confirm": True},
        {"id": "mem_missing", "confirm": True},
    ]


async def disconnect_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": "grant_missing", "confirm": True}]


PARITY_CASES: dict[str, Prepare] = {
    "get_me": no_args,
    "list_members": no_args,
    "get_sending_settings": no_args,
    "update_sending_settings": settings_args,
    "create_invitation": invitation_args,
    "delete_invitation": delete_invitation_args,
    "update_member": update_member_args,
    "remove_member": remove_member_args,
    "list_api_keys": no_args,
    "create_api_key": create_key_args,
    "revoke_api_key": revoke_key_args,
    "list_connected_apps": no_args,
    "disconnect_app": disconnect_args,
}


def test_every_tool_has_a_parity_case() -> None:
    assert set(ENDPOINTS) == set(PARITY_CASES)


def _strip_volatile(value: Any) -> Any:
    """lastUsedAt changes with every authenticated call, so only its presence is compared."""
    if isinstance(value, dict):
        return {k: ("<set>" if k == "lastUsedAt" and v else _strip_volatile(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
    return value


@pytest.mark.parametrize("tool", sorted(PARITY_CASES))
async def test_mcp_returns_what_rest_returns(
    tool: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    ws = await make_workspace()
    prepare = PARITY_CASES[tool]
    rest_args, mcp_args = await prepare(http, ws), await prepare(http, ws)
    async with mcp_session(ws.api_key) as client:
        for rest_input, mcp_input in zip(rest_args, mcp_args, strict=True):
            status, rest_body = await call_rest(http, ws.headers, tool, rest_input)
            is_error, mcp_body = await call_mcp(client, tool, mcp_input)
            assert is_error == (status >= 400), (tool, rest_input, rest_body, mcp_body)
            assert normalize(_strip_volatile(mcp_body)) == normalize(_strip_volatile(rest_body)), (
                tool,
                rest_input,
            )


async def test_workspaces_cannot_reach_each_other(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    their_member = await theirs.add_member("member")
    their_key = await _new_key(http, theirs, "theirs")
    their_invite = await _invitation(http, theirs, "their-invite@example.com")
    their_member_id = await _member_id(http, theirs, their_member.user_id)
    attempts = [
        ("revoke_api_key", {"id": their_key["id"], "confirm": True}),
        ("delete_invitation", {"id": their_invite}),
        ("update_member", {"id": their_member_id, "role": "owner"}),
        ("remove_member", {"id": their_member_id, "confirm": True}),
    ]
    async with mcp_session(mine.api_key) as client:
        for tool, args in attempts:
            status, body = await call_rest(http, mine.headers, tool, args)
            assert status == 404 and body["error"]["code"] == "not_found", (tool, body)
            is_error, mcp_body = await call_mcp(client, tool, args)
            assert is_error and mcp_body["error"]["code"] == "not_found", (tool, mcp_body)

        for tool in ("list_api_keys", "list_members"):
            _, rest_view = await call_rest(http, mine.headers, tool, {})
            _, mcp_view = await call_mcp(client, tool, {})
            text = str(rest_view) + str(mcp_view)
            assert (
                their_key["id"] not in text
                and their_member.user_id not in text
                and theirs.user_id not in text
            )

    # their things are untouched
    assert (
        await http.get("/api/v1/me", headers={"Authorization": f"Bearer {their_key['key']}"})
    ).status_code == 200
    assert (await http.get("/api/v1/me", headers=their_member.headers)).json()["role"] == "member"
    invites = (await http.get("/api/v1/members", headers=theirs.headers)).json()["invitations"]
    assert [i["id"] for i in invites] == [their_invite]
