"""The rules of roles that depend on the target, which the operations keep (an admin may not remove an
owner; only owners and admins revoke another member's key), through both doors. Who may call a tool at all
is its catalogue entry's `role`, checked for every tool by tests/test_isolation_and_roles.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.doors import call_mcp, call_rest

Setup = Callable[[httpx.AsyncClient, WorkspaceHandle], Awaitable[dict[str, Any]]]


async def _member_row(http: httpx.AsyncClient, owner: WorkspaceHandle, user_id: str) -> str:
    members = (await http.get("/api/v1/members", headers=owner.headers)).json()["members"]
    return str(next(m["id"] for m in members if m["userId"] == user_id))


async def owner_removal(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    target = await owner.add_member("owner")
    return {"id": await _member_row(http, owner, target.user_id), "confirm": True}


async def owners_key_revocation(http: httpx.AsyncClient, owner: WorkspaceHandle) -> dict[str, Any]:
    key = (await http.post("/api/v1/apiKeys/create", headers=owner.headers, json={"name": "owner's"})).json()
    return {"id": key["id"], "confirm": True}


# tool, argument set-up (done by the owner), roles allowed (the others get 403 forbidden)
MATRIX: list[tuple[str, Setup, set[str]]] = [
    ("remove_member", owner_removal, {"owner"}),
    ("revoke_api_key", owners_key_revocation, {"owner", "admin"}),
]


@pytest.mark.parametrize("door", ["rest", "mcp"])
@pytest.mark.parametrize("role", ["owner", "admin", "member"])
@pytest.mark.parametrize(
    ("tool", "setup", "allowed"), MATRIX, ids=[f"{m[0]}-{m[1].__name__}" for m in MATRIX]
)
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


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
async def test_me_reports_the_role(role: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    owner = await make_workspace()
    caller = owner if role == "owner" else await owner.add_member(role)
    assert (await http.get("/api/v1/me", headers=caller.headers)).json()["role"] == role
