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


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    """An async engine with the pragmas and transaction handling this service relies on.

    SQLite: WAL, foreign keys, and transactions begun explicitly so that a write transaction can take the
    write lock up front (`BEGIN IMMEDIATE`, via the `sqlite_begin` execution option) instead of failing with
    "database is locked" when it upgrades from a read lock halfway through.
    """
    json_codec: dict[str, Any] = {"json_serializer": _json_dumps, "json_deserializer": orjson.loads}
    if url.startswith("sqlite"):
        engine = create_async_engine(url, poolclass=NullPool if ":memory:" in url else None, **json_codec)
        _install_sqlite_hooks(engine)
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


def _install_sqlite_hooks(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        for pragma in SQLITE_PRAGMAS:
            cur.execute(pragma)
        cur.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")
