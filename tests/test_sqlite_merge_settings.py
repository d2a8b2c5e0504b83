"""SQLite settings for storing an import at a million leads (issue 31, branch `sqlite1m`).

The database's connections checkpoint the WAL past 50,000 pages, the import side file's at SQLite's 1,000;
the import merge's connection runs a larger page cache (`import_merge_cache_mb`) while it merges a part, and
hands the connection back with the service's 64 MB."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from outreach_core.imports.merge import import_principal, merge_queued_rows
from outreach_core.kernel.db.engine import create_engine
from outreach_core.kernel.db.side_queue import side_queue
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from tests.conftest import PG_URL, MakeWorkspace
from tests.leads.helpers import import_chunk, listing

pytestmark = pytest.mark.skipif(bool(PG_URL), reason="SQLite's pragmas (PostgreSQL has no page cache to set)")


async def _pragma(runtime: Runtime, name: str) -> Any:
    async with runtime.engine.connect() as conn:
        return (await conn.exec_driver_sql(f"PRAGMA {name}")).scalar_one()


@pytest.fixture
async def merging_runtime(runtime: Runtime, settings: Settings) -> AsyncIterator[Runtime]:
    """A runtime on the test database as the worker process makes it, with a 512 MB merge cache."""
    engine = create_engine(settings.database_url)
    merging = settings.model_copy(update={"import_merge_cache_mb": 512})
    rt = Runtime(merging, engine=engine, ports=runtime.ports)
    yield rt
    await engine.dispose()


async def test_a_connection_checkpoints_the_wal_past_50000_pages_and_the_side_file_past_1000(
    runtime: Runtime,
) -> None:
    assert await _pragma(runtime, "wal_autocheckpoint") == 50_000
    assert await _pragma(runtime, "cache_size") == -65_536
    assert await _pragma(runtime, "journal_mode") == "wal"
    async with side_queue(runtime.engine).reading() as side:
        assert (await side.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar_one() == 1_000


async def test_the_merge_runs_its_larger_cache_and_hands_the_connection_back_with_64_mb(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, merging_runtime: Runtime
) -> None:
    ws = await make_workspace()
    rows = [{"email": f"cache{i}@merge.test"} for i in range(30)]
    response = await import_chunk(http, ws, rows=rows, final=True, list={"name": "Cache"})
    assert response.status_code == 200, response.text
    during: list[int] = []

    @event.listens_for(merging_runtime.engine.sync_engine, "after_cursor_execute")
    def _cache_while_inserting(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("INSERT INTO leads "):
            cursor = conn.connection.dbapi_connection.cursor()
            cursor.execute("PRAGMA cache_size")
            during.append(cursor.fetchone()[0])
            cursor.close()

    merged = await merging_runtime.execute(import_principal(ws.workspace_id), merge_queued_rows)

    assert merged == 30
    assert during == [-512 * 1024]
    # the pool's only connection, the merge's: back at the service's cache for whatever it serves next
    assert merging_runtime.engine.pool.checkedin() == 1
    assert await _pragma(merging_runtime, "cache_size") == -65_536
    page = await listing(http, ws, pageSize=50)
    assert sorted(lead["email"] for lead in page["leads"]) == sorted(r["email"] for r in rows)
