"""SQLite's import queue in a file of its own (`<database>-imports`, kernel/db/side_queue.py): a chunk of an
existing import is accepted while another process holds the database's write lock (the merge), counted at
once, never twice; a merge whose process dies between its commit and the part's deletion from the side file
is not merged again."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from outreach_core.imports.merge import import_principal, merge_queued_rows
from outreach_core.imports.operations import get_import
from outreach_core.kernel.db.health import queue_depths
from outreach_core.kernel.db.side_queue import side_parts, side_queue, side_rows
from outreach_core.kernel.db.tables import lead_imports
from outreach_core.kernel.settings import Settings, sqlite_path
from tests.conftest import PG_URL, MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import import_chunk, listing, merge_imports

pytestmark = pytest.mark.skipif(bool(PG_URL), reason="SQLite's side file (PostgreSQL keeps import_queue)")

OUTCOMES = ("created", "updated", "skipped", "duplicates", "suppressed", "invalid", "overLimit", "queued")


@contextmanager
def database_write_lock(settings: Settings) -> Iterator[None]:
    """The database's write lock held from another connection, as the merge's transaction holds it."""
    path = sqlite_path(settings.database_url)
    assert path is not None
    conn = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


async def _import(http: httpx.AsyncClient, ws: WorkspaceHandle, import_id: str) -> dict[str, Any]:
    response = await http.get(f"/api/v1/leads/imports/{import_id}", headers=ws.headers)
    assert response.status_code == 200, response.text
    imp: dict[str, Any] = response.json()
    assert imp["rows"] == sum(imp[name] for name in OUTCOMES), imp  # exact at every point
    return imp


def _rows(prefix: str, n: int) -> list[dict[str, str]]:
    return [{"email": f"{prefix}{i}@side.test"} for i in range(n)]


async def _side_parts_of(ws: WorkspaceHandle, import_id: str) -> tuple[int, int]:
    """(headers, parts with rows) the side file holds for the import."""
    async with side_queue(ws.runtime.engine).reading() as side:
        headers = await side.execute(
            select(func.count()).select_from(side_parts).where(side_parts.c.import_id == import_id)
        )
        with_rows = await side.execute(
            select(func.count()).select_from(side_rows).where(side_rows.c.import_id == import_id)
        )
        return int(headers.scalar_one()), int(with_rows.scalar_one())


async def test_a_chunk_is_accepted_and_counted_while_the_database_is_write_locked(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, settings: Settings
) -> None:
    ws = await make_workspace()
    first = await import_chunk(http, ws, rows=_rows("a", 3))
    assert first.status_code == 200, first.text
    import_id = first.json()["id"]
    with database_write_lock(settings):
        second = await import_chunk(http, ws, importId=import_id, rows=_rows("b", 4))
        assert second.status_code == 200, second.text
        assert (second.json()["rows"], second.json()["queued"]) == (7, 7)
        again = await import_chunk(http, ws, importId=import_id, rows=_rows("b", 4))  # a client retry
        assert (again.json()["rows"], again.json()["queued"]) == (7, 7)
        final = await import_chunk(
            http, ws, importId=import_id, rows=_rows("c", 2), final=True, clientInvalid=1
        )
        assert final.status_code == 200, final.text
        late = await import_chunk(http, ws, importId=import_id, rows=_rows("d", 1))
        assert late.status_code == 409, late.text
        imp = await _import(http, ws, import_id)
        assert (imp["rows"], imp["queued"], imp["invalid"], imp["status"]) == (10, 9, 1, "importing")
    await merge_imports(ws)
    imp = await _import(http, ws, import_id)
    assert (imp["rows"], imp["created"], imp["invalid"], imp["queued"]) == (10, 9, 1, 0)
    assert imp["status"] == "enriching"
    assert await _side_parts_of(ws, import_id) == (3, 0)  # headers kept (retries), rows released


async def test_a_retried_chunk_changes_nothing_before_or_after_its_merge(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    import_id = (await import_chunk(http, ws, rows=_rows("r", 2))).json()["id"]
    chunk = {"importId": import_id, "rows": _rows("s", 3)}
    assert (await import_chunk(http, ws, **chunk)).json()["rows"] == 5
    assert (await import_chunk(http, ws, **chunk)).json()["rows"] == 5
    await merge_imports(ws)
    retried = (await import_chunk(http, ws, **chunk)).json()
    assert (retried["rows"], retried["created"], retried["queued"]) == (5, 5, 0)
    await merge_imports(ws)
    imp = await _import(http, ws, import_id)
    assert (imp["rows"], imp["created"], imp["duplicates"], imp["queued"]) == (5, 5, 0, 0)


async def test_a_merge_that_dies_before_the_side_file_is_cleared_is_not_merged_again(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    await merge_imports(ws)  # what earlier tests left queued
    import_id = (await import_chunk(http, ws, rows=_rows("k", 4))).json()["id"]
    await import_chunk(http, ws, importId=import_id, rows=[*_rows("k", 2), *_rows("m", 3)], final=True)
    assert (await queue_depths(ws.runtime.engine))["imports"] == 2
    # the merge's transaction commits; the worker dies before it deletes the part from the side file
    merged = await ws.runtime.execute(import_principal(ws.workspace_id), merge_queued_rows)
    assert merged == 4
    assert await _side_parts_of(ws, import_id) == (2, 2)
    imp = await _import(http, ws, import_id)
    assert (imp["rows"], imp["created"], imp["queued"]) == (9, 4, 5)  # the merged part counted once
    assert (await queue_depths(ws.runtime.engine))["imports"] == 1
    await merge_imports(ws)  # the next worker: releases the merged part, merges the other
    imp = await _import(http, ws, import_id)
    assert (imp["rows"], imp["created"], imp["duplicates"], imp["queued"]) == (9, 7, 2, 0)
    assert imp["status"] == "enriching"
    assert len((await listing(http, ws, pageSize=200))["leads"]) == 7
    assert await _side_parts_of(ws, import_id) == (2, 0)
    assert (await queue_depths(ws.runtime.engine))["imports"] == 0


async def test_chunks_are_merged_in_the_order_they_arrived(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    import_id = (await import_chunk(http, ws, rows=[{"email": "o@side.test", "firstName": "First"}])).json()[
        "id"
    ]
    for name in ("Second", "Third"):
        body = {"importId": import_id, "rows": [{"email": "o@side.test", "firstName": name}]}
        assert (await import_chunk(http, ws, **body)).status_code == 200
    await merge_imports(ws)
    [lead] = (await listing(http, ws, search="o@side.test"))["leads"]
    assert lead["firstName"] == "First"  # the first occurrence is created, later ones are duplicates
    imp = await _import(http, ws, import_id)
    assert (imp["created"], imp["duplicates"]) == (1, 2)


async def test_a_deleted_workspace_leaves_nothing_in_the_side_file(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    import_id = (await import_chunk(http, ws, rows=_rows("g", 2))).json()["id"]
    await import_chunk(http, ws, importId=import_id, rows=_rows("h", 2))
    async with ws.runtime.engine.begin() as conn:
        await conn.exec_driver_sql("DELETE FROM workspaces WHERE id = ?", (ws.workspace_id,))
    await merge_imports(ws)  # runs dry: the parts of the deleted import are dropped, not merged
    assert await _side_parts_of(ws, import_id) == (0, 0)


async def test_an_import_read_across_a_merge_counts_each_part_once(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """A reader whose snapshot of the database was taken before a part's merge, and who reads the side file
    after the part was released, still counts the part (once): as queued, as its database says."""
    ws = await make_workspace()
    first = await import_chunk(http, ws, rows=_rows("c", 3))
    import_id = first.json()["id"]
    await import_chunk(http, ws, importId=import_id, rows=_rows("d", 4))
    seen: dict[str, Any] = {}

    async def read_across_the_merge(ctx: Any) -> None:
        # this read fixes the transaction's snapshot of the database: before the merges below
        await ctx.conn.execute(select(lead_imports.c.rows).where(lead_imports.c.id == import_id))
        await merge_imports(ws)  # merged, committed and released by the worker's path meanwhile
        assert await _side_parts_of(ws, import_id) == (2, 0)
        seen.update((await get_import(ctx, import_id)).model_dump(by_alias=True))

    await ws.runtime.read(import_principal(ws.workspace_id), read_across_the_merge)
    assert (seen["rows"], seen["queued"], seen["created"]) == (7, 7, 0)  # as of its snapshot: all queued
    now = await _import(http, ws, import_id)
    assert (now["rows"], now["queued"], now["created"]) == (7, 0, 7)


async def test_a_chunk_after_an_empty_final_chunk_is_refused_by_the_side_file(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """An empty final chunk, recorded in the database at once, is noted in the side file too: a chunk whose
    request read the database before that commit still finds the final chunk there (409)."""
    ws = await make_workspace()
    first = await import_chunk(http, ws, rows=_rows("e", 2))
    import_id = first.json()["id"]
    await merge_imports(ws)
    final = await import_chunk(http, ws, importId=import_id, rows=[], final=True)
    assert final.status_code == 200, final.text
    assert final.json()["status"] != "importing"
    async with side_queue(ws.runtime.engine).reading() as side:
        finals = await side.execute(
            select(side_parts.c.rows, side_parts.c.pending).where(
                side_parts.c.import_id == import_id, side_parts.c.final
            )
        )
        assert finals.all() == [(0, False)]  # nothing to merge or count, only the mark
    late = await import_chunk(http, ws, importId=import_id, rows=_rows("f", 1))
    assert late.status_code == 409, late.text
    imp = await _import(http, ws, import_id)
    assert (imp["rows"], imp["created"], imp["queued"]) == (2, 2, 0)


async def test_a_chunk_is_not_queued_behind_a_first_chunk_waiting_for_the_merge(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, settings: Settings
) -> None:
    """Chunks of existing imports queue for the side file in the server process before they take a database
    connection (`Endpoint.waits_for`); a first chunk, which writes the database and so waits for the merge's
    write lock, is not in that queue: the chunks sent after it are accepted while it waits."""
    ws = await make_workspace()
    import_id = (await import_chunk(http, ws, rows=_rows("w", 2))).json()["id"]
    with database_write_lock(settings):
        first = asyncio.create_task(import_chunk(http, ws, rows=_rows("new", 2)))
        await asyncio.sleep(0.5)
        assert not first.done()  # waits for the database's write lock
        chunk = await asyncio.wait_for(import_chunk(http, ws, importId=import_id, rows=_rows("x", 3)), 5)
        assert chunk.status_code == 200, chunk.text
        assert (chunk.json()["rows"], chunk.json()["queued"]) == (5, 5)
        assert not first.done()
    started = await first
    assert started.status_code == 200, started.text
    assert started.json()["rows"] == 2
