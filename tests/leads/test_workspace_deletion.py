"""On PostgreSQL `leads` and `lead_search_pending` have no foreign key to `workspaces` (migration 0035), nor
`import_seen` to `lead_imports` and `workspaces` (migration 0039): the workspace's deletion deletes them by
trigger, and every writer of leads holds the workspace's row until it commits. Whichever comes first, a
workspace's deletion or an import storing its leads, no lead, search-queue row, list membership or address
an import met outlives the workspace. (The service has no workspace deletion path: the operator deletes the
row, as here. SQLite keeps the foreign keys; the first test holds on both engines.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from outreach_core.imports.merge import import_principal, merge_queued_rows
from tests.conftest import PG_URL, MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import import_chunk, listing, merge_imports

pg_only = pytest.mark.skipif(not PG_URL, reason="PostgreSQL's row locks between two transactions")

OWNED = ("leads", "lead_search_pending", "lead_search", "list_leads", "lists", "lead_imports", "import_seen")


async def _left_of(ws: WorkspaceHandle) -> dict[str, int]:
    """Rows each table still holds for the workspace (`lead_search_pending` exists on both engines; only
    PostgreSQL's merge fills it)."""
    found = {}
    async with ws.runtime.engine.connect() as conn:
        for table in OWNED:
            if table == "lead_search" and conn.dialect.name != "postgresql":
                continue
            query = text(f"SELECT count(*) FROM {table} WHERE workspace_id = :ws")
            found[table] = int((await conn.execute(query, {"ws": ws.workspace_id})).scalar_one())
    return found


async def _delete_workspace(conn: AsyncConnection, workspace_id: str) -> None:
    await conn.execute(text("DELETE FROM workspaces WHERE id = :ws"), {"ws": workspace_id})


async def test_deleting_a_workspace_deletes_its_leads_and_keeps_the_others(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    gone, kept = await make_workspace(), await make_workspace()
    for ws in (gone, kept):
        list_id = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": "all"})).json()["id"]
        rows = [{"email": f"p{i}@wsgone.test", "company": "Gone Inc"} for i in range(30)]
        queued = await import_chunk(http, ws, rows=rows, list={"id": list_id}, final=True)
        assert queued.status_code == 200, queued.text
        made = await http.post(
            "/api/v1/leads", headers=ws.headers, json={"email": "one@wsgone.test", "listId": list_id}
        )
        assert made.status_code == 200, made.text
    # an update import still running (not final) that met 20 of them: their addresses are in `import_seen`
    # until it is done
    again = [{"email": f"p{i}@wsgone.test", "title": "Boss"} for i in range(20)]
    assert (await import_chunk(http, gone, rows=again, existing="update")).status_code == 200
    await merge_imports(gone)  # stored, and (PostgreSQL) waiting in the search queue: no worker ran since
    before = await _left_of(gone)
    assert (before["leads"], before["list_leads"], before["import_seen"]) == (31, 31, 20)
    if PG_URL:
        assert before["lead_search_pending"] == 30
    async with gone.runtime.engine.begin() as conn:
        await _delete_workspace(conn, gone.workspace_id)
    assert set((await _left_of(gone)).values()) == {0}
    shown = await listing(http, kept, search="wsgone", pageSize=100)
    assert shown["total"] == 31 == len(shown["leads"])
    assert (await _left_of(kept))["leads"] == 31


async def _waiting_for_a_lock(conn: AsyncConnection, pid: int) -> bool:
    query = text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid")
    return (await conn.execute(query, {"pid": pid})).scalar_one_or_none() == "Lock"


async def _until_waiting(observer: AsyncConnection, pid: int, task: Awaitable[Any]) -> bool:
    """Whether the backend `pid` comes to wait for a lock within 10 s (False: `task` ended first)."""
    assert isinstance(task, asyncio.Task)
    for _ in range(500):
        if task.done():
            return False
        if await _waiting_for_a_lock(observer, pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def _pid(conn: AsyncConnection) -> int:
    return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


@pg_only
async def test_a_workspace_deleted_while_its_import_stores_waits_and_takes_the_leads_along(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """The merge holds the workspace from its start: a deletion coming while a part is being merged waits
    for its commit, then deletes the leads it stored (no deadlock, no error on either side)."""
    ws = await make_workspace()
    await merge_imports(ws)  # what earlier tests left queued
    list_id = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": "race"})).json()["id"]
    rows = [{"email": f"p{i}@wsrace.test"} for i in range(25)]
    queued = await import_chunk(http, ws, rows=rows, list={"id": list_id}, final=True)
    assert queued.status_code == 200, queued.text
    engine = ws.runtime.engine
    async with engine.connect() as blocker, engine.connect() as deleter, engine.connect() as observer:
        # another transaction holding the import's list: the merge, once it holds the workspace, waits for
        # it before storing (`lock_list`)
        blocking = await blocker.begin()
        await blocker.execute(text("SELECT id FROM lists WHERE id = :id FOR UPDATE"), {"id": list_id})
        merging = asyncio.ensure_future(
            ws.runtime.execute(import_principal(ws.workspace_id), merge_queued_rows)
        )
        assert await _until_waiting(observer, await _merge_backend(observer), merging)
        deleting_tx = await deleter.begin()
        deleter_pid = await _pid(deleter)
        deleting = asyncio.ensure_future(_delete_workspace(deleter, ws.workspace_id))
        assert await _until_waiting(observer, deleter_pid, deleting)  # for the merge's hold
        await blocking.rollback()
        assert await merging == 25  # stored and committed
        await deleting
        await deleting_tx.commit()
    assert set((await _left_of(ws)).values()) == {0}


@pg_only
async def test_a_workspace_deleted_before_its_import_stores_gets_no_lead(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """A deletion not committed yet when the merge starts: the merge waits for it, then finds no workspace
    and stores nothing (no error, no lead)."""
    ws = await make_workspace()
    await merge_imports(ws)
    rows = [{"email": f"p{i}@wsfirst.test"} for i in range(25)]
    assert (await import_chunk(http, ws, rows=rows, final=True)).status_code == 200
    engine = ws.runtime.engine
    async with engine.connect() as deleter, engine.connect() as observer:
        deleting_tx = await deleter.begin()
        await _delete_workspace(deleter, ws.workspace_id)
        merging = asyncio.ensure_future(
            ws.runtime.execute(import_principal(ws.workspace_id), merge_queued_rows)
        )
        assert await _until_waiting(observer, await _merge_backend(observer), merging)
        await deleting_tx.commit()
        assert await merging == 0
    assert set((await _left_of(ws)).values()) == {0}


async def _merge_backend(observer: AsyncConnection) -> int:
    """The backend running the merge: the one holding the import's advisory lock (`pg_try_advisory_xact_lock`,
    `merge._claim`), once it has it."""
    query = text(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    for _ in range(500):
        pids = (await observer.execute(query)).scalars().all()
        if len(pids) == 1:
            return int(pids[0])
        await asyncio.sleep(0.02)
    raise AssertionError("no merge holding an import's advisory lock")
