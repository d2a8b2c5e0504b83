"""SQLite: the database's WAL is copied back into it past 50,000 pages (200 MB), not SQLite's 1,000 (issue 31,
branch `sqlite1m`): an import's merge rewrites the same scattered index pages part after part, and each
checkpoint copies a page once however often it was written since the last. The import side file keeps
1,000: its writers are the chunk requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from outreach_core.kernel.db.engine import create_engine
from outreach_core.kernel.db.side_queue import side_queue
from outreach_core.kernel.runtime import Runtime
from tests.conftest import PG_URL

pytestmark = pytest.mark.skipif(bool(PG_URL), reason="SQLite's WAL (PostgreSQL checkpoints by itself)")


async def _pragma(engine: AsyncEngine, name: str) -> Any:
    async with engine.connect() as conn:
        return (await conn.exec_driver_sql(f"PRAGMA {name}")).scalar_one()


async def test_a_connection_of_the_service_checkpoints_past_50000_pages_the_side_file_past_1000(
    runtime: Runtime,
) -> None:
    fresh = create_engine(runtime.settings.database_url)
    try:
        assert await _pragma(fresh, "journal_mode") == "wal"
        assert await _pragma(fresh, "wal_autocheckpoint") == 50_000
        assert await _pragma(fresh, "cache_size") == -65_536
    finally:
        await fresh.dispose()
    async with side_queue(runtime.engine).reading() as side:
        assert (await side.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar_one() == 1_000


async def test_a_commit_of_8_mb_stays_in_the_wal_instead_of_being_copied_back(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE pages (n INTEGER PRIMARY KEY, body BLOB)")
        before = path.stat().st_size
        async with engine.begin() as conn:  # about 2,000 pages of 4 KB, twice SQLite's default threshold
            await conn.exec_driver_sql(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2800) "
                "INSERT INTO pages (body) SELECT randomblob(3000) FROM n"
            )
        assert path.with_name("checkpoints.db-wal").stat().st_size > 8_000_000
        assert path.stat().st_size == before  # nothing copied back yet
        async with engine.connect() as conn:
            assert (await conn.exec_driver_sql("SELECT count(*) FROM pages")).scalar_one() == 2_800
    finally:
        await engine.dispose()
