"""Search finds an import's leads the moment they are stored (by testing their text), and through the search
index once the search-index worker has taken them, which it does only after every queued part is stored
(issue 31; PostgreSQL: the side table `lead_search`, whose GIN indexes the storing never pays)."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import lead_search, lead_search_pending, leads
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import import_chunk, listing, merge_imports
from workers import search_index


async def _indexed(ws: WorkspaceHandle) -> tuple[int, int]:
    """(leads in the search index, leads waiting for it) of the workspace."""

    async def count(ctx: WorkspaceContext) -> tuple[int, int]:
        if ctx.conn.dialect.name == "postgresql":
            done = scoped(ctx, lead_search).select(func.count())
            waiting = scoped(ctx, lead_search_pending).select(func.count())
        else:
            done = scoped(ctx, leads).select(func.count()).where(leads.c.search_index.is_not(None))
            waiting = scoped(ctx, leads).select(func.count()).where(leads.c.search_index.is_(None))
        return int((await ctx.conn.execute(done)).scalar_one()), int(
            (await ctx.conn.execute(waiting)).scalar_one()
        )

    return await ws.runtime.read(await ws.principal(), count)


async def _emails(http: httpx.AsyncClient, ws: WorkspaceHandle, term: str) -> list[str]:
    return sorted(lead["email"] for lead in (await listing(http, ws, search=term, pageSize=100))["leads"])


async def test_stored_leads_are_found_at_once_and_indexed_after_the_import(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    rows: list[dict[str, Any]] = [
        {"email": "ada@zqxfirst.test", "firstName": "Ada", "company": "Zqxengines"},
        {"email": "bob@zqxsecond.test", "firstName": "Bob", "company": "Other"},
    ]
    first = await import_chunk(http, ws, rows=rows[:1])
    await merge_imports(ws)
    await import_chunk(http, ws, importId=first.json()["id"], rows=rows[1:], final=True)  # a part queued
    assert await search_index.tick(ws.runtime) == 0  # storing comes first: nothing indexed yet
    assert await _indexed(ws) == (0, 1)
    assert await _emails(http, ws, "zqxengines") == ["ada@zqxfirst.test"]  # found by its text meanwhile

    await merge_imports(ws)
    while await search_index.tick(ws.runtime):
        pass
    assert await _indexed(ws) == (2, 0)
    assert await _emails(http, ws, "zqx") == ["ada@zqxfirst.test", "bob@zqxsecond.test"]
    assert await _emails(http, ws, "zqxe") == ["ada@zqxfirst.test"]  # through the trigram index now
    assert await _emails(http, ws, "q") != []  # a short term through its own index

    [ada] = (await listing(http, ws, search="zqxengines"))["leads"]
    renamed = await http.patch(
        f"/api/v1/leads/{ada['id']}", headers=ws.headers, json={"company": "Plmwidgets"}
    )
    assert renamed.status_code == 200
    assert await _emails(http, ws, "plmwidgets") == ["ada@zqxfirst.test"]
    assert await _emails(http, ws, "zqxengines") == []

    deleted = await http.post("/api/v1/leads/delete", headers=ws.headers, json={"target": {"all": True}})
    assert deleted.status_code == 200, deleted.text
    assert await _indexed(ws) == (0, 0)  # nothing left behind in the index
