"""Many chunks uploaded at once (issue 31's leftovers): a chunk request waiting for the lock its import's
chunks take one after the other (SQLite: the side file's write lock; PostgreSQL: the import's row) holds no
database connection while it waits, so the pool stays free for everything else: `GET /leads` and `/readyz`
answer promptly while 40 chunks wait, and every chunk is then accepted and counted exactly once."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from sqlalchemy import text

from outreach_core.kernel.settings import Settings, sqlite_path
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import import_chunk, listing, merge_imports

OUTCOMES = ("created", "updated", "skipped", "duplicates", "suppressed", "invalid", "overLimit", "queued")
PROMPT_S = 2.0
"""How long a read may take while the chunks wait (it takes milliseconds when it gets a connection; the
pool's wait for a connection before this fix was up to 30 s, and `/readyz` gave up after 3)."""


@asynccontextmanager
async def chunks_blocked(
    ws: WorkspaceHandle, settings: Settings, import_ids: list[str]
) -> AsyncIterator[None]:
    """What a chunk of these imports waits for, held from another connection as another process (or a
    slow chunk) would hold it. SQLite: the side file's write lock (the worker process releasing merged
    parts takes it); PostgreSQL: the imports' rows (a chunk's request locks its import's row)."""
    if ws.runtime.is_sqlite:
        path = sqlite_path(settings.database_url)
        assert path is not None
        side = sqlite3.connect(f"{path}-imports", isolation_level=None, timeout=5)
        try:
            side.execute("BEGIN IMMEDIATE")
            yield
            side.execute("ROLLBACK")
        finally:
            side.close()
        return
    async with ws.runtime.engine.connect() as conn, conn.begin():
        await conn.execute(
            text("SELECT id FROM lead_imports WHERE id = ANY(:ids) FOR UPDATE"), {"ids": import_ids}
        )
        yield


def _rows(prefix: str, n: int) -> list[dict[str, str]]:
    return [{"email": f"{prefix}{i}@crowd.test", "firstName": f"F{i}"} for i in range(n)]


async def _timed(call: Any) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = await call
    return response, time.perf_counter() - started


async def test_forty_chunks_at_once_leave_the_pool_to_other_requests(
    http: httpx.AsyncClient, live_server: str, make_workspace: MakeWorkspace, settings: Settings
) -> None:
    ws = await make_workspace(plan="agency")
    await merge_imports(ws)  # what earlier tests left queued
    starts = [await import_chunk(http, ws, rows=_rows(f"i{n}-first-", 10)) for n in range(3)]
    assert all(s.status_code == 200 for s in starts), [s.text for s in starts]
    import_ids = [s.json()["id"] for s in starts]
    # 40 requests: 16 chunks of one import and 10 of each of two others, 4 of them sent again (retries)
    chunks: list[tuple[str, dict[str, Any]]] = []
    for n, count in enumerate((16, 10, 10)):
        for c in range(count):
            chunks.append((import_ids[n], {"importId": import_ids[n], "rows": _rows(f"i{n}-c{c}-", 200)}))
    chunks += [chunks[0], chunks[1], chunks[16], chunks[27]]
    assert len(chunks) == 40
    crowd = httpx.AsyncClient(base_url=live_server, timeout=120, limits=httpx.Limits(max_connections=100))
    async with crowd:
        async with chunks_blocked(ws, settings, import_ids):
            sent = [asyncio.create_task(import_chunk(crowd, ws, **body)) for _, body in chunks]
            await asyncio.sleep(1.0)  # the chunks are in and waiting
            assert not any(task.done() for task in sent), "the chunks did not wait for the lock"
            (leads, leads_s), (ready, ready_s) = await asyncio.gather(
                _timed(crowd.get("/api/v1/leads", headers=ws.headers)), _timed(crowd.get("/readyz"))
            )
            assert leads.status_code == 200, leads.text
            assert ready.status_code == 200, ready.text
            assert leads_s < PROMPT_S and ready_s < PROMPT_S, (leads_s, ready_s)
            assert not any(task.done() for task in sent)  # the reads were answered while the chunks waited
        answers = await asyncio.gather(*sent)
    assert [a.status_code for a in answers] == [200] * 40, [a.text for a in answers if a.status_code != 200]
    for response, (import_id, _) in zip(answers, chunks, strict=True):  # each answers its own import
        answer = response.json()
        assert answer["id"] == import_id
        assert answer["rows"] == sum(answer[name] for name in OUTCOMES), answer
    expected = {import_ids[0]: 10 + 16 * 200, import_ids[1]: 10 + 10 * 200, import_ids[2]: 10 + 10 * 200}
    for import_id, rows in expected.items():  # retries counted once
        imp = (await http.get(f"/api/v1/leads/imports/{import_id}", headers=ws.headers)).json()
        assert (imp["rows"], imp["queued"] + imp["created"]) == (rows, rows), imp
    await merge_imports(ws)
    for import_id, rows in expected.items():
        imp = (await http.get(f"/api/v1/leads/imports/{import_id}", headers=ws.headers)).json()
        assert (imp["rows"], imp["created"], imp["duplicates"], imp["queued"]) == (rows, rows, 0, 0), imp
    assert (await listing(http, ws, pageSize=10))["total"] == sum(expected.values())


async def test_chunks_of_many_imports_waiting_at_once_leave_the_pool_to_other_requests(
    http: httpx.AsyncClient, live_server: str, make_workspace: MakeWorkspace, settings: Settings
) -> None:
    """30 imports, a chunk of each at once: on PostgreSQL thirty different locks, so waiting one after the
    other per import is not enough; at most `QUEUED_CALL_SLOTS` of them hold a connection."""
    ws = await make_workspace(plan="agency")
    starts = [await import_chunk(http, ws, rows=_rows(f"m{n}-first-", 2)) for n in range(30)]
    import_ids = [s.json()["id"] for s in starts]
    crowd = httpx.AsyncClient(base_url=live_server, timeout=120, limits=httpx.Limits(max_connections=100))
    async with crowd:
        async with chunks_blocked(ws, settings, import_ids):
            sent = [
                asyncio.create_task(import_chunk(crowd, ws, importId=i, rows=_rows(f"m{n}-", 50), final=True))
                for n, i in enumerate(import_ids)
            ]
            await asyncio.sleep(1.0)
            assert not any(task.done() for task in sent), "the chunks did not wait for the lock"
            leads, leads_s = await _timed(crowd.get("/api/v1/leads", headers=ws.headers))
            assert leads.status_code == 200, leads.text
            assert leads_s < PROMPT_S, leads_s
            assert not any(task.done() for task in sent)
        answers = await asyncio.gather(*sent)
    assert [a.status_code for a in answers] == [200] * 30, [a.text for a in answers if a.status_code != 200]
    assert [(a.json()["id"], a.json()["rows"]) for a in answers] == [(i, 52) for i in import_ids]
