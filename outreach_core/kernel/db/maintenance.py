"""Planner statistics upkeep after bulk changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection


async def refresh_lead_statistics(conn: AsyncConnection) -> None:
    """Refresh the query planner's statistics of `leads` after a bulk import.

    Right after an import of many leads the planner still believes the old row counts and may pick a sort
    over the whole workspace instead of the matching index (measured: 130 ms instead of 1 ms on PostgreSQL
    for `sort=email` at 100,000 leads). Runs once per finished import, from the enrichment worker, never in
    a request. SQLite samples a bounded number of rows per index so this stays well under a second.
    """
    if conn.dialect.name == "sqlite":
        await conn.exec_driver_sql("PRAGMA analysis_limit=2000")
        await conn.exec_driver_sql("ANALYZE leads")
        # A connection reads the statistics when it loads the schema, and ANALYZE leaves the schema version
        # as it is once `sqlite_stat1` exists: every connection already open (the server's pool, the other
        # workers) would go on planning with what it read at its start (at a million leads, statistics of
        # an empty table made search pages take 0.3-0.8 s instead of 10-70 ms). A change to the schema
        # has each reload it before its next statement.
        await conn.exec_driver_sql("CREATE VIEW statistics_refreshed AS SELECT 1")
        await conn.exec_driver_sql("DROP VIEW statistics_refreshed")
    elif await _analyse_lock(conn, "leads"):
        await conn.exec_driver_sql("ANALYZE leads")


async def _analyse_lock(conn: AsyncConnection, table: str) -> bool:
    """PostgreSQL: whether this transaction may ANALYZE `table` without waiting. An ANALYZE waits for another
    transaction's ANALYZE of the same table to end (an enrichment batch would wait for a whole merge); a
    table another transaction is analysing is left to it. The advisory lock is held until the transaction
    ends, like ANALYZE's own."""
    key = f"analyze:{table}"
    free = await conn.exec_driver_sql("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))", (key,))
    return bool(free.scalar())


GROWN_BY = 0.5
"""`refresh_grown_statistics` analyses a table once the rows changed since its last ANALYZE reach this
fraction of the rows it had then (and at least `GROWN_FROM`)."""
GROWN_FROM = 2_000


async def refresh_grown_statistics(conn: AsyncConnection, tables: Sequence[str]) -> list[str]:
    """PostgreSQL: ANALYZE each of `tables` whose rows changed since its last ANALYZE by `GROWN_BY` of its
    size then (a table never analysed: by `GROWN_FROM` rows); returns the tables analysed. SQLite: nothing
    (its planner does without statistics for these tables; `leads` has `refresh_lead_statistics`).

    This is autovacuum's analyse threshold kept by the code itself, so that statements on tables an import
    grows are planned from their real size even on a server without autovacuum (or with it behind). The
    counts come from the statistics system (`pg_stat_user_tables.n_mod_since_analyze`), which a backend
    reports within about a second of its commit: the check is a catalogue read of a few rows. Runs in the
    caller's transaction."""
    if conn.dialect.name != "postgresql":
        return []
    rows: list[Any] = list(
        await conn.exec_driver_sql(
            "SELECT s.relname, c.reltuples, s.n_mod_since_analyze FROM pg_stat_user_tables s "
            "JOIN pg_class c ON c.oid = s.relid WHERE s.schemaname = current_schema() "
            "AND s.relname = ANY($1)",
            (list(tables),),
        )
    )
    # (name, rows at the last ANALYZE or -1 when never, rows changed since)
    stale = sorted(str(r[0]) for r in rows if r[2] >= max(GROWN_FROM, GROWN_BY * max(r[1], 0)))
    analysed = []
    for name in stale:
        if await _analyse_lock(conn, name):
            await conn.exec_driver_sql(f"ANALYZE {name}")
            analysed.append(name)
    return analysed
