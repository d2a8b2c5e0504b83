"""`list_leads` has no foreign key to `leads` (migration 0022): the statement deleting leads deletes their
memberships. Whichever way leads are deleted, no membership outlives its lead, and every list counts exactly
its remaining members."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, list_leads
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
