"""`list_leads` has no foreign key to `leads` (migration 0022): the statement deleting leads deletes their
memberships. Whichever way leads are deleted, no membership outlives its lead, and every list counts exactly
its remaining members."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, list_leads, lists
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import import_chunk, listing, merge_imports


async def _orphans_and_members(ws: WorkspaceHandle) -> tuple[int, int]:
    async def count(ctx: WorkspaceContext) -> tuple[int, int]:
        members = scoped(ctx, list_leads)
        alive = scoped(ctx, leads).select(leads.c.id).where(leads.c.id == list_leads.c.lead_id).exists()
        orphans = members.select(func.count()).where(~alive)
        total = members.select(func.count())
        return int((await ctx.conn.execute(orphans)).scalar_one()), int(
            (await ctx.conn.execute(total)).scalar_one()
        )

    return await ws.runtime.read(await ws.principal(), count)


@pytest.mark.parametrize("how", ["ids", "listId", "filter", "all"])
async def test_deleting_leads_leaves_no_membership_behind(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, how: str
) -> None:
    ws = await make_workspace()
    made = {}
    for name in ("a", "b"):
        made[name] = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": name})).json()["id"]
    rows = [{"email": f"p{i}@orphans.test", "company": "Keep" if i % 2 else "Drop"} for i in range(40)]
    await import_chunk(http, ws, rows=rows, list={"id": made["a"]}, final=True)  # memberships by the merge
    await merge_imports(ws)
    added = await http.post(  # and by the lists domain
        "/api/v1/leads/lists/add",
        headers=ws.headers,
        json={"listId": made["b"], "target": {"filter": {"search": "p1"}}},
    )
    assert added.status_code == 200, added.text
    assert await _orphans_and_members(ws) == (0, 40 + 11)  # p1, p10-p19

    page = await listing(http, ws, search="drop", pageSize=100)
    target: dict[str, Any] = {
        "ids": {"ids": [lead["id"] for lead in page["leads"]]},
        "listId": {"listId": made["b"]},
        "filter": {"filter": {"search": "drop"}},
        "all": {"all": True},
    }[how]
    deleted = await http.post("/api/v1/leads/delete", headers=ws.headers, json={"target": target})
    assert deleted.status_code == 200, deleted.text
    orphans, members = await _orphans_and_members(ws)
    assert orphans == 0
    totals = 0
    for list_id in made.values():  # each list counts exactly its members that are still leads
        shown = await listing(http, ws, listId=list_id, pageSize=100)
        assert shown["total"] == len(shown["leads"])
        totals += shown["total"]
    assert members == totals
    assert members < 40 + 11  # and something was deleted


async def _members_without_list(ws: WorkspaceHandle) -> int:
    async def count(ctx: WorkspaceContext) -> int:
        members = scoped(ctx, list_leads)
        alive = scoped(ctx, lists).select(lists.c.id).where(lists.c.id == list_leads.c.list_id).exists()
        return int((await ctx.conn.execute(members.select(func.count()).where(~alive))).scalar_one())

    return await ws.runtime.read(await ws.principal(), count)


async def test_deleting_a_list_leaves_no_membership_behind(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """`list_leads` has no foreign key to `lists` either (migration 0032): the statement deleting a list
    deletes its memberships, and the other list's stay."""
    ws = await make_workspace()
    made = {}
    for name in ("gone", "kept"):
        made[name] = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": name})).json()["id"]
    rows = [{"email": f"p{i}@listgone.test"} for i in range(30)]
    await import_chunk(http, ws, rows=rows, list={"id": made["gone"]}, final=True)
    await merge_imports(ws)
    added = await http.post(
        "/api/v1/leads/lists/add", headers=ws.headers, json={"listId": made["kept"], "target": {"all": True}}
    )
    assert added.status_code == 200, added.text
    assert await _orphans_and_members(ws) == (0, 60)
    deleted = await http.delete(f"/api/v1/lists/{made['gone']}", headers=ws.headers)
    assert deleted.status_code == 200, deleted.text
    assert await _members_without_list(ws) == 0
    assert await _orphans_and_members(ws) == (0, 30)
    assert (await listing(http, ws, listId=made["kept"], pageSize=100))["total"] == 30


async def test_a_list_deleted_while_its_import_is_queued_gets_no_members(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """The merge writes the memberships of a part only if the import's list still exists (it holds the
    list's row until its commit); the leads are stored and counted all the same."""
    ws = await make_workspace()
    list_id = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": "short-lived"})).json()[
        "id"
    ]
    rows = [{"email": f"p{i}@shortlived.test"} for i in range(25)]
    queued = await import_chunk(http, ws, rows=rows, list={"id": list_id}, final=True)
    assert queued.status_code == 200, queued.text
    deleted = await http.delete(f"/api/v1/lists/{list_id}", headers=ws.headers)
    assert deleted.status_code == 200, deleted.text
    await merge_imports(ws)
    imp = (await http.get(f"/api/v1/leads/imports/{queued.json()['id']}", headers=ws.headers)).json()
    assert (imp["created"], imp["queued"]) == (25, 0)
    assert await _members_without_list(ws) == 0
    assert (await listing(http, ws, search="shortlived", pageSize=100))["total"] == 25
