"""What each piece of `leads` costs PostgreSQL when the import merge stores a 5,000-row part (issue 31).

PostgreSQL only, on a scratch database (OUTREACH_DATABASE_URL; it is migrated, and a workspace, a list and
`--prefill` leads are written into it through the real import: chunks queued by `import_leads`, merged by
`merge_queued_rows`, the import worker's operation). Then one more 5,000-row part of new addresses is
queued and merged `--repeat` times per variant, each time on one connection inside a transaction that is
rolled back afterwards (then `VACUUM leads, list_leads, lead_search_pending` and the staging table
truncated, so no run meets the dead rows and index entries of the one before). A variant first changes
the schema inside that transaction (drops an index, a trigger or a foreign key, or rebuilds an index
without the search text): the drop is rolled back with the rest, so every variant starts from the same
database.

Reported per variant (median of the runs): wall milliseconds of the merge, CPU microseconds per row of the
database backend (`/proc/<pid>/stat` of `pg_backend_pid()`, utime + stime) and of this process (the merge's
Python and asyncpg, `process_time`), and the backend's saving against the baseline, i.e. what that piece
costs. With `--explain`, the merge's statements once more with `auto_explain` (ANALYZE, BUFFERS, nested
statements, sent to this client as LOG messages), printed for the statements over 5 ms.

    OUTREACH_DATABASE_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/scratch_x \
        .venv/bin/python bench/import_merge_pieces.py [--prefill 100000] [--repeat 3] [--explain] [--statements]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _seed import bench_workspace
from import_e2e import row
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection

from outreach_core.imports.merge import import_principal, merge_queued_rows
from outreach_core.imports.operations import import_leads
from outreach_core.imports.schemas import ImportIn
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings

PART = 5_000
TICK_S = 1 / os.sysconf("SC_CLK_TCK")

Variant = tuple[str, list[str]]


def backend_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


async def index_defs(conn: AsyncConnection, table: str) -> dict[str, tuple[str, bool]]:
    """name -> (CREATE INDEX statement, is it a constraint's)"""
    if conn.dialect.name == "sqlite":
        rows = await conn.exec_driver_sql(
            f"SELECT name, coalesce(sql, ''), sql IS NULL FROM sqlite_master "
            f"WHERE type = 'index' AND tbl_name = '{table}' ORDER BY name"
        )
        return {r[0]: (r[1], bool(r[2])) for r in rows}
    rows = await conn.exec_driver_sql(
        "SELECT i.relname, pg_get_indexdef(x.indexrelid), "
        "EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) "
        "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        f"WHERE x.indrelid = '{table}'::regclass ORDER BY i.relname"
    )
    return {r[0]: (r[1], r[2]) for r in rows}


NO_LIST = "UPDATE lead_imports SET list_id = NULL"


async def list_size_triggers(conn: AsyncConnection) -> list[str]:
    """The names of the triggers keeping the lists' member counts (migration 0037), if there are any."""
    if conn.dialect.name == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'list_sizes_%'"
    else:
        query = "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'list_sizes_%'"
    return sorted(str(r[0]) for r in await conn.exec_driver_sql(query))


FK_OFF = "PRAGMA foreign_keys = OFF"


async def variants(conn: AsyncConnection) -> list[Variant]:
    found: list[Variant] = [("baseline (the merge as it is)", [])]
    lead_indexes = await index_defs(conn, "leads")
    for name, (_, constraint) in lead_indexes.items():
        if name == "pk_leads" or constraint:
            continue
        found.append((f"leads: without {name}", [f"DROP INDEX {name}"]))
    found.append(("no list memberships (the import without a list)", [NO_LIST]))
    sizes = await list_size_triggers(conn)
    if sizes:  # migration 0037 on
        on = "" if conn.dialect.name == "sqlite" else " ON list_leads"
        found.append(("list_leads: without the list size triggers",
                      [f"DROP TRIGGER {name}{on}" for name in sizes]))  # fmt: skip
    if conn.dialect.name == "sqlite":
        secondary = [n for n, (_, c) in lead_indexes.items() if not c]
        found.append(("leads: without any secondary index but the unique one",
                      [f"DROP INDEX {n}" for n in secondary]))  # fmt: skip
        found.append(("leads: without the counter trigger",
                      ["DROP TRIGGER lead_counters_insert"]))  # fmt: skip
        # SQLite cannot drop a foreign key without rebuilding the table: its checks are switched off on the
        # connection instead (outside the transaction, where the pragma works), every foreign key at once
        found.append(("without any foreign key check (PRAGMA foreign_keys = OFF)", [FK_OFF]))
        found.append(("... and without any index but the unique one, no list",
                      ["DROP TRIGGER lead_counters_insert", NO_LIST,
                       *(f"DROP INDEX {n}" for n in secondary)]))  # fmt: skip
        return found
    carriers = [n for n, (d, _) in lead_indexes.items() if "search_index" in d and "WHERE" not in d]
    rebuild = []
    for name in carriers:
        definition, constraint = lead_indexes[name]
        if constraint:
            rebuild += [
                f"ALTER TABLE leads DROP CONSTRAINT {name}",
                f"ALTER TABLE leads ADD CONSTRAINT {name} UNIQUE (workspace_id, email)",
            ]
        else:
            lean = definition.replace(", search_index)", ")")
            rebuild += [f"DROP INDEX {name}", lean]
    found.append((f"leads: {len(carriers)} indexes without search_index", rebuild))
    secondary = [n for n, (_, c) in lead_indexes.items() if n != "pk_leads" and not c]
    found.append(("leads: without any secondary index but the unique one",
                  [f"DROP INDEX {n}" for n in secondary]))  # fmt: skip
    found.append(("leads: without trigger lead_counters_insert",
                  ["DROP TRIGGER lead_counters_insert ON leads"]))  # fmt: skip
    found.append(("leads: without FK to workspaces",
                  ["ALTER TABLE leads DROP CONSTRAINT IF EXISTS "
                   "fk_leads_workspace_id_workspaces"]))  # fmt: skip
    for name in await index_defs(conn, "list_leads"):
        if name != "pk_list_leads":
            found.append((f"list_leads: without {name}", [f"DROP INDEX {name}"]))
    found.append(("list_leads: without its two FKs", [
        "ALTER TABLE list_leads DROP CONSTRAINT IF EXISTS fk_list_leads_list_id_lists",
        "ALTER TABLE list_leads DROP CONSTRAINT IF EXISTS fk_list_leads_workspace_id_workspaces",
    ]))  # fmt: skip
    found.append(("lead_search_pending: without its index and FK", [
        "DROP INDEX ix_lead_search_pending_ws",
        "ALTER TABLE lead_search_pending DROP CONSTRAINT IF EXISTS "
        "fk_lead_search_pending_workspace_id_workspaces",
    ]))  # fmt: skip
    found.append(("all four foreign keys the part's rows check (per row)", [
        "ALTER TABLE leads DROP CONSTRAINT IF EXISTS "
                   "fk_leads_workspace_id_workspaces",
        "ALTER TABLE list_leads DROP CONSTRAINT IF EXISTS fk_list_leads_list_id_lists",
        "ALTER TABLE list_leads DROP CONSTRAINT IF EXISTS fk_list_leads_workspace_id_workspaces",
        "ALTER TABLE lead_search_pending DROP CONSTRAINT IF EXISTS "
        "fk_lead_search_pending_workspace_id_workspaces",
    ]))  # fmt: skip
    return found


async def queue_part(rt: Runtime, principal: Any, body: dict[str, Any]) -> str:
    result = await rt.execute(principal, import_leads, ImportIn.model_validate(body))
    return str(result.id)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefill", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument(
        "--statements", action="store_true", help="the baseline's statements timed one by one (wall ms)"
    )
    parser.add_argument("--only", default="", help="run only variants whose name contains this")
    args = parser.parse_args()
    url = os.environ.get("OUTREACH_DATABASE_URL") or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/pieces.db"
    settings = Settings(database_url=url)
    rt = Runtime(settings)
    await migrate(rt.engine)
    workspace_id, _ = await bench_workspace(rt, "pieces", "Pieces")
    principal = import_principal(workspace_id)
    rng = random.Random(7)
    started = time.perf_counter()
    import_id: str | None = None
    for first in range(0, args.prefill + PART, PART):
        body: dict[str, Any] = {
            "rows": [row(i, rng) for i in range(first, first + PART)],
            "final": False,
            "existing": "skip",
        }
        if import_id is None:
            body["list"] = {"name": "Pieces"}
        else:
            body["importId"] = import_id
        import_id = await queue_part(rt, principal, body)
        if first < args.prefill:  # the last part stays queued: the one measured
            while await rt.execute(principal, merge_queued_rows):
                pass
    async with rt.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql("VACUUM ANALYZE" if rt.engine.dialect.name == "postgresql" else "ANALYZE")
    print(
        f"{args.prefill:,} leads stored through the import in {time.perf_counter() - started:.0f} s; "
        f"one part of {PART:,} new addresses merged {args.repeat} times per variant, rolled back; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
        flush=True,
    )

    async with rt.engine.connect() as conn:
        found = await variants(conn)
    base_db: float | None = None
    print(f"{'variant':<62} {'wall ms':>8} {'db µs/row':>10} {'py µs/row':>10} {'saves':>7}", flush=True)
    cost = 1 if rt.engine.dialect.name == "postgresql" else 2  # SQLite: its work is in this process
    await one_merge(rt, principal, [])  # warm-up, not counted: the pool's connections, caches, staging table
    found.append(("baseline again (drift over the run)", []))
    for name, ddl in found:
        if args.only and args.only not in name and not name.startswith("baseline"):
            continue
        walls, dbs, pys = [], [], []
        for _ in range(args.repeat):
            wall, db, py = await one_merge(rt, principal, ddl)
            walls.append(wall)
            dbs.append(db)
            pys.append(py)
        db = statistics.median(dbs) if cost == 1 else statistics.median(pys)
        if base_db is None:
            base_db = db
        print(
            f"{name:<62} {statistics.median(walls) * 1e3:8.0f} {db / PART * 1e6:10.1f} "
            f"{statistics.median(pys) / PART * 1e6:10.1f} {(base_db - db) / PART * 1e6:7.1f}",
            flush=True,
        )
    if args.explain:
        await explain(rt, principal)
    if args.statements:
        await time_statements(rt, principal, args.repeat)
    print(f"load average at the end {os.getloadavg()[0]:.2f}", flush=True)
    await rt.dispose()


async def in_rolled_back(
    rt: Runtime, principal: Any, ddl: list[str], work: Callable[[WorkspaceContext], Awaitable[Any]]
) -> tuple[float, float, float]:
    postgresql = rt.engine.dialect.name == "postgresql"
    async with rt.engine.connect() as conn:
        pid = 0
        if postgresql:
            pid = int((await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar_one())
            await conn.commit()
        else:
            await conn.execution_options(sqlite_begin="IMMEDIATE")
            if FK_OFF in ddl:
                await _sqlite_pragma(conn, FK_OFF)
        trans = await conn.begin()
        for statement in ddl:
            if statement != FK_OFF:
                await conn.exec_driver_sql(statement)
        if FK_OFF in ddl:
            assert (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar_one() == 0
        ctx = rt._workspace_ctx(conn, principal)
        db0 = backend_cpu(pid) if pid else 0.0
        py0, wall0 = time.process_time(), time.perf_counter()
        merged = await work(ctx)
        wall, py = time.perf_counter() - wall0, time.process_time() - py0
        db = (backend_cpu(pid) - db0) if pid else 0.0
        await trans.rollback()
        if FK_OFF in ddl:
            await _sqlite_pragma(conn, "PRAGMA foreign_keys = ON")
        assert merged == PART, merged
        if postgresql:
            # the staging tables empty themselves at a commit (ON COMMIT DELETE ROWS), not at a rollback:
            # without this every run would scan the dead rows of the runs before on this connection
            await conn.exec_driver_sql(
                "DO $$ BEGIN IF to_regclass('pg_temp.import_lead_stage') IS NOT NULL THEN "
                "TRUNCATE pg_temp.import_lead_stage; END IF; END $$"
            )
            await conn.commit()
    if not postgresql:
        return wall, db, py
    async with rt.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql("VACUUM leads, list_leads, lead_search_pending, lead_counter_deltas")
    return wall, db, py


async def _sqlite_pragma(conn: AsyncConnection, pragma: str) -> None:
    """A pragma on the connection's SQLite connection outside any transaction (inside one, `foreign_keys`
    does nothing)."""
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    await driver.execute(pragma)


async def one_merge(rt: Runtime, principal: Any, ddl: list[str]) -> tuple[float, float, float]:
    return await in_rolled_back(rt, principal, ddl, merge_queued_rows)


async def time_statements(rt: Runtime, principal: Any, repeat: int) -> None:
    """The baseline merge `repeat` times more, each statement's wall time from the driver's cursor events
    (median per statement; on SQLite the database's work is in this process, so at a low load it is
    CPU), and what is left: the merge's Python."""
    times: dict[str, list[float]] = {}
    started: list[float] = []

    def before(*_: Any) -> None:
        started.append(time.perf_counter())

    def after(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        key = " ".join(statement.split())[:90]
        times.setdefault(key, []).append(time.perf_counter() - started.pop())

    engine = rt.engine.sync_engine
    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    walls = []
    try:
        for _ in range(repeat):
            walls.append((await one_merge(rt, principal, []))[0])
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)
    print(f"{'statement (median over the runs, ms and µs a row)':<92} {'ms':>7} {'µs/row':>7}")
    total = 0.0
    for key, spent in sorted(times.items(), key=lambda kv: -sum(kv[1])):
        per_run = sum(spent) / repeat
        total += per_run
        if per_run >= 0.5e-3:
            print(f"{key:<92} {per_run * 1e3:7.1f} {per_run / PART * 1e6:7.1f}")
    rest = statistics.median(walls) - total
    print(f"{'the rest (Python, driver round trips)':<92} {rest * 1e3:7.1f} {rest / PART * 1e6:7.1f}")


async def explain(rt: Runtime, principal: Any) -> None:
    """The merge once more, its statements explained by auto_explain (sent to this client)."""
    messages: list[str] = []

    async def work(ctx: WorkspaceContext) -> int:
        raw = await ctx.conn.get_raw_connection()
        driver = raw.driver_connection
        assert driver is not None
        driver.add_log_listener(lambda _c, m: messages.append(m.message))
        for setting in (
            "LOAD 'auto_explain'",
            "SET auto_explain.log_min_duration = 5",
            "SET auto_explain.log_analyze = on",
            "SET auto_explain.log_buffers = on",
            "SET auto_explain.log_triggers = on",
            "SET auto_explain.log_nested_statements = on",
            "SET client_min_messages = log",
        ):
            await ctx.conn.exec_driver_sql(setting)
        return await merge_queued_rows(ctx)

    await in_rolled_back(rt, principal, [], work)
    for message in messages:
        print(message, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
