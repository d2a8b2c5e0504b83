"""What the parity and foreign cases of several domains share: fresh data made through the API, unique
names, the types of both kinds of case."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tests.conftest import WorkspaceHandle

Args = list[dict[str, Any]]
Prepare = Callable[[httpx.AsyncClient, WorkspaceHandle], Awaitable[Args]]
"""A parity case: builds fresh data in the workspace and returns the argument sets to call the tool with."""
Foreign = Callable[[httpx.AsyncClient, WorkspaceHandle, WorkspaceHandle], Awaitable[Args]]
"""A foreign case, `case(http, mine, theirs)`: builds objects in `theirs` (and in `mine` where a call names
both, e.g. my campaign with their mailbox) and returns the argument sets with which `mine` names theirs.
`tests/test_isolation_and_roles.py` calls the tool with each through every door and checks that it answers
exactly as for ids that do not exist (404 for a path id), shows nothing of theirs and changes nothing of
theirs. A tool that names nothing (a listing, a creation) gets a case too: its arguments are called the same
way after `theirs` has data, so the listing must not show it and the creation must not touch it."""
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


async def foreign_targets(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> list[dict[str, Any]]:
    """Lead targets naming another workspace's leads, list and label in each way a target can: by ids,
    by list, by a filter on list and label (their lead is on that list and carries that label); and
    `all`, which means all of the caller's own leads and none of theirs."""
    lead, list_id, label_id = (
        await row_lead(theirs),
        await new_list(http, theirs),
        await new_label(http, theirs),
    )
    for path, body in (("lists/add", {"listId": list_id}), ("labels/add", {"labelId": label_id})):
        added = await http.post(
            f"/api/v1/leads/{path}", headers=theirs.headers, json={**body, "target": {"ids": [lead]}}
        )
        assert added.status_code == 200, added.text
    filtered = {"filter": {"listId": list_id, "labelId": label_id}}
    return [{"ids": [lead]}, {"listId": list_id}, filtered, {"all": True}]


async def nothing_named(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """The foreign case of a tool that takes no arguments and names nothing: called with `theirs` holding
    a lead, a list and a label, it must show none of them."""
    await foreign_targets(http, theirs)
    return [{}]
