"""What the parity cases of several domains share: fresh data made through the API, unique names."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tests.conftest import WorkspaceHandle

Args = list[dict[str, Any]]
Prepare = Callable[[httpx.AsyncClient, WorkspaceHandle], Awaitable[Args]]
"""A parity case: builds fresh data in the workspace and returns the argument sets to call the tool with."""
unique = itertools.count()


async def new_key(http: httpx.AsyncClient, ws: WorkspaceHandle, name: str = "k") -> dict[str, Any]:
    return (await http.post("/api/v1/apiKeys/create", headers=ws.headers, json={"name": name})).json()  # type: ignore[no-any-return]


async def member_id(http: httpx.AsyncClient, ws: WorkspaceHandle, user_id: str) -> str:
    members = (await http.get("/api/v1/members", headers=ws.headers)).json()["members"]
    return str(next(m["id"] for m in members if m["userId"] == user_id))


async def invitation(http: httpx.AsyncClient, ws: WorkspaceHandle, email: str) -> str:
    created = await http.post("/api/v1/invitations", headers=ws.headers, json={"email": email})
    return str(created.json()["id"])


async def no_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{}]


async def parity_lead(http: httpx.AsyncClient, ws: WorkspaceHandle) -> str:
    body = {"email": f"p{next(unique)}@parity.test", "company": "Parity"}
    return str((await http.post("/api/v1/leads", headers=ws.headers, json=body)).json()["id"])


async def row_lead(ws: WorkspaceHandle) -> str:
    from tests.lists.helpers import add_leads

    return (await add_leads(ws, f"p{next(unique)}@parity.test"))[0]


def parity_name() -> str:
    return f"parity-{next(unique)}"


async def new_list(http: httpx.AsyncClient, ws: WorkspaceHandle) -> str:
    created = await http.post("/api/v1/lists", headers=ws.headers, json={"name": parity_name()})
    return str(created.json()["id"])


async def new_label(http: httpx.AsyncClient, ws: WorkspaceHandle, **fields: Any) -> str:
    body = {"name": parity_name(), **fields}
    return str((await http.post("/api/v1/labels", headers=ws.headers, json=body)).json()["id"])
