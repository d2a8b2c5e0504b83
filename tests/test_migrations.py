"""Migrations produce exactly the schema the code declares, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from outreach_core.db.tables import metadata
from outreach_core.runtime import Runtime


async def test_migrated_schema_matches_tables(runtime: Runtime) -> None:
    def diff(sync_conn: Any) -> list[Any]:
        ctx = MigrationContext.configure(sync_conn, opts={"compare_type": False})
        return list(compare_metadata(ctx, metadata))

    async with runtime.engine.connect() as conn:
        differences = [d for d in await conn.run_sync(diff) if not _is_search_index(d)]
    assert differences == []


def _is_search_index(diff: Any) -> bool:
    """The lead search index (FTS5 / pg_trgm) is created by raw DDL in migration 0002 on purpose."""
    obj = diff[1] if isinstance(diff, tuple) and len(diff) > 1 else None
    name = getattr(obj, "name", "") or ""
    return name.startswith("leads_fts") or name == "ix_leads_search_trgm"


async def test_sqlite_runs_in_wal_with_foreign_keys(runtime: Runtime) -> None:
    if not runtime.is_sqlite:
        return
    async with runtime.engine.connect() as conn:
        assert (await conn.execute(text("PRAGMA journal_mode"))).scalar_one() == "wal"
        assert (await conn.execute(text("PRAGMA foreign_keys"))).scalar_one() == 1


async def test_postgresql_plans_each_statement_for_its_parameters(runtime: Runtime) -> None:
    """A generic plan made while a table was small would stay a sequential scan as an import grows it."""
    if runtime.is_sqlite:
        return
    async with runtime.engine.connect() as conn:
        assert (await conn.execute(text("SHOW plan_cache_mode"))).scalar_one() == "force_custom_plan"
