"""Engine construction for SQLite (embedded default) and PostgreSQL (asyncpg)."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

POSTGRESQL_SETTINGS = {
    # asyncpg prepares every statement, and after five executions PostgreSQL may switch to a generic plan
    # that it keeps until the table's statistics change. Planned while a table was small (the first chunks
    # of an import), such a plan stays a sequential scan as the table grows to millions of rows, and without
    # a timely ANALYZE (autovacuum off or behind) one 5,000-address lookup took 49 s instead of 30 ms
    # (measured). Custom plans see the parameters and the table's current size, at ~0.1 ms of planning.
    "plan_cache_mode": "force_custom_plan",
}
SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA busy_timeout=15000",
    "PRAGMA temp_store=MEMORY",
    "PRAGMA cache_size=-65536",
)
SQLITE_CHECKPOINT_PAGES = 50_000
"""The database's WAL is copied back into it (a checkpoint, by the connection whose commit takes the WAL past
this many pages: 200 MB) instead of at SQLite's 1,000 (4 MB). A checkpoint copies each page once however
often it was written since the last one; an import's merge rewrites 10,000-17,000 scattered index pages per
5,000-row part (200,000 to a million leads), which SQLite's default copied back after every part (issue 31:
the merge alone 3-7 µs a row of CPU and 15-20 µs of wall time less). The WAL file keeps its largest size
on disk. The import side file keeps SQLite's default: its chunk requests would pay the larger checkpoints."""
SQLITE_DEFAULT_CHECKPOINT_PAGES = 1_000


def create_engine(
    url: str, *, pool_size: int = 10, checkpoint_pages: int = SQLITE_CHECKPOINT_PAGES
) -> AsyncEngine:
    """An async engine with the pragmas and transaction handling this service relies on.

    SQLite: WAL, foreign keys, and transactions begun explicitly so that a write transaction can take the
    write lock up front (`BEGIN IMMEDIATE`, via the `sqlite_begin` execution option) instead of failing with
    "database is locked" when it upgrades from a read lock halfway through.
    """
    json_codec: dict[str, Any] = {"json_serializer": _json_dumps, "json_deserializer": orjson.loads}
    if url.startswith("sqlite"):
        engine = create_async_engine(url, poolclass=NullPool if ":memory:" in url else None, **json_codec)
        _install_sqlite_hooks(engine, (*SQLITE_PRAGMAS, f"PRAGMA wal_autocheckpoint={checkpoint_pages}"))
        return engine
    kwargs: dict[str, Any] = {
        "pool_size": pool_size,
        "max_overflow": pool_size,
        "pool_pre_ping": True,
        "connect_args": {"server_settings": POSTGRESQL_SETTINGS},
        **json_codec,
    }
    return create_async_engine(url, **kwargs)


def _json_dumps(value: Any) -> str:
    """JSON columns written with orjson: an import part's 5,000 rows in a few milliseconds (`json.dumps`
    took several times as long). Keys that are not strings are written as strings, as `json` did."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _install_sqlite_hooks(engine: AsyncEngine, pragmas: tuple[str, ...]) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        for pragma in pragmas:
            cur.execute(pragma)
        cur.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")
