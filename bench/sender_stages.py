"""Where the sender's scheduling pass spends its time, stage by stage, on a database `bench/sender_scale.py`
seeded (OUTREACH_DATABASE_URL, as with its `--reuse`).

Each stage of `plan_batch` (recovery, due mailboxes, campaigns, stop rules, candidates, the spread, compose,
the ledger write ...) is wrapped with a timer of wall and process CPU time; every statement's wall time is
summed too (round trip plus the driver and SQLAlchemy's Python on its rows). Nested stages are included in
their parents. `--profile FILE` writes a cProfile of the timed passes; `--explain` prints EXPLAIN (ANALYZE,
BUFFERS) of every statement slower than `--explain-ms` on PostgreSQL (run after the timing, in a rolled-back
transaction).

    OUTREACH_DATABASE_URL=... .venv/bin/python bench/sender_stages.py [--passes 5] [--profile pass.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.ext.asyncio import AsyncConnection  # noqa: E402

from outreach_core.kernel.db.migrate import migrate  # noqa: E402
from outreach_core.kernel.db.tables import mailboxes  # noqa: E402
from outreach_core.kernel.settings import Settings  # noqa: E402
from outreach_core.sending import claim as claim_module  # noqa: E402
from outreach_core.sending import planner  # noqa: E402

WALL: dict[str, list[float]] = defaultdict(list)
CPU: dict[str, list[float]] = defaultdict(list)
CALLS: dict[str, int] = defaultdict(int)
_current: dict[str, list[float]] = {}
STATEMENTS: list[tuple[float, str, Any]] = []
_record_statements = [False]
DATABASE = [""]


def _add(name: str, wall: float, cpu: float) -> None:
    acc = _current.setdefault(name, [0.0, 0.0, 0])
    acc[0] += wall
    acc[1] += cpu
    acc[2] += 1


def timed_async(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return await fn(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - t0, time.process_time() - c0)

    return wrapper


def timed_sync(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - t0, time.process_time() - c0)

    return wrapper


def instrument() -> None:
    planner.recover_lost_sends = timed_async("recover_lost_sends", planner.recover_lost_sends)
    planner.update_each = timed_async("planner update_each (asleep, later, nap)", planner.update_each)
    planner.finish_leads = timed_async("finish_leads (stops)", planner.finish_leads)
    P = planner._Planner
    for name in (
        "load_campaigns",
        "pause_ended",
        "pick_follow_ups",
        "pick_first_emails",
        "_first_candidates",
        "_screen",
        "_suppressed",
        "_company_replies",
        "nap_idle",
    ):
        setattr(P, name, timed_async(f"  {name}", getattr(P, name)))
    planner.rules.spread_first_emails = timed_sync("  spread_first_emails", planner.rules.spread_first_emails)
    planner.claim = timed_async("claim (whole)", planner.claim)
    claim_module.email_for = timed_sync("  claim: email_for (compose + tracking)", claim_module.email_for)
    claim_module.insert_rows = timed_async("  claim: insert_rows (ledger)", claim_module.insert_rows)
    claim_module.update_each = timed_async("  claim: update_each (3)", claim_module.update_each)
    claim_module.tracking_base_url = timed_async("  claim: tracking_base_url", claim_module.tracking_base_url)
    claim_module.proxy_urls = timed_async("  claim: proxy_urls", claim_module.proxy_urls)
    from outreach_core.sending import handoff

    handoff.compose = timed_sync("    compose", handoff.compose)
    handoff.track_email = timed_sync("    track_email", handoff.track_email)
    handoff.unsubscribe_url = timed_sync("    unsubscribe_url", handoff.unsubscribe_url)
    original_execute = AsyncConnection.execute
    original_driver = AsyncConnection.exec_driver_sql

    async def execute(self: AsyncConnection, statement: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await original_execute(self, statement, *args, **kwargs)
        finally:
            wall = time.perf_counter() - t0
            _add("(every statement: execute)", wall, 0.0)
            if _record_statements[0]:
                STATEMENTS.append((wall, "execute", (statement, args, kwargs)))

    async def exec_driver_sql(self: AsyncConnection, statement: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await original_driver(self, statement, *args, **kwargs)
        finally:
            _add("(every statement: exec_driver_sql)", time.perf_counter() - t0, 0.0)

    AsyncConnection.execute = execute  # type: ignore[method-assign]
    AsyncConnection.exec_driver_sql = exec_driver_sql  # type: ignore[method-assign]


def _server_cpu() -> float | None:
    """CPU seconds (user + system) so far of the PostgreSQL backends connected to this benchmark's database
    (found by their process title, which names the database; the WAL writer and checkpointer are not in
    it)."""
    total, found = 0, False
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if not stat[stat.index("(") + 1 : stat.rindex(")")].startswith("postgres"):
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().decode(errors="replace")
        except OSError:
            continue
        if f" {DATABASE[0]} " in title:
            fields = stat[stat.rindex(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])
            found = True
    return total / tick if found else None


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--explain-ms", type=float, default=20.0)
    args = parser.parse_args()
    url = os.environ["OUTREACH_DATABASE_URL"]
    DATABASE[0] = url.rsplit("/", 1)[-1].split("?")[0]
    from outreach_app.bootstrap import build_runtime

    rt = build_runtime(Settings(database_url=url, secret_key="bench-secret", sender_idle_nap_s=0))
    await migrate(rt.engine)
    engine = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
    async with rt.engine.begin() as conn:
        await conn.execute(text("DELETE FROM sends"))
        await conn.execute(
            text("UPDATE campaign_leads SET next_at = NULL, mailbox_id = NULL WHERE status = 'not_contacted'")
        )
        await conn.execute(mailboxes.update().values(next_send_at=None, sent_count=0, sent_day=None))
    async with rt.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        for table in ("sends", "campaign_leads", "mailboxes"):
            await conn.execute(text(f"VACUUM ANALYZE {table}" if engine == "PostgreSQL" else "ANALYZE"))
    instrument()
    profiler = cProfile.Profile() if args.profile else None
    server_cpus: list[float] = []
    totals: list[tuple[float, float, int]] = []
    for i in range(args.passes + 1):  # the first pass warms caches and is not counted
        async with rt.engine.begin() as conn:
            await conn.execute(mailboxes.update().values(next_send_at=None))
        _current.clear()
        _record_statements[0] = args.explain and i == args.passes
        if profiler and i > 0:
            profiler.enable()
        s0 = _server_cpu()
        t0, c0 = time.perf_counter(), time.process_time()
        batch = await rt.system(planner.plan_batch)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if i > 0 and s0 is not None:
            server_cpus.append((_server_cpu() or 0.0) - s0)
        if profiler and i > 0:
            profiler.disable()
        if i == 0:
            continue
        totals.append((wall, cpu, len(batch.jobs)))
        for name, (w, c, n) in _current.items():
            WALL[name].append(w)
            CPU[name].append(c)
            CALLS[name] = int(n)
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{engine}: {args.passes} passes of {totals[0][2]} emails; load {load}")
    print(f"{'stage':50} {'wall ms':>9} {'CPU ms':>9} {'calls':>6}   (medians)")
    print(
        f"{'plan_batch (whole pass)':50} {statistics.median(t[0] for t in totals) * 1000:9.1f} "
        f"{statistics.median(t[1] for t in totals) * 1000:9.1f}"
    )
    for name in _current:
        wall, cpu = statistics.median(WALL[name]) * 1000, statistics.median(CPU[name]) * 1000
        print(f"{name:50} {wall:9.1f} {cpu:9.1f} {CALLS[name]:6}")
    if server_cpus:
        print(f"{'(PostgreSQL backends: CPU)':50} {'':9} {statistics.median(server_cpus) * 1000:9.1f}")
    most_wall, most_cpu = max(t[0] for t in totals) * 1000, max(t[1] for t in totals) * 1000
    print(f"max wall {most_wall:.0f} ms, max CPU {most_cpu:.0f} ms")
    if profiler:
        profiler.dump_stats(args.profile)
        print(f"profile: {args.profile}")
    if args.explain and engine == "PostgreSQL":
        await explain(rt, args.explain_ms)
    await rt.dispose()


async def explain(rt: Any, ms: float) -> None:
    slow = sorted((s for s in STATEMENTS if s[0] * 1000 >= ms), key=lambda s: -s[0])
    for wall, _, (statement, args, _kw) in slow:
        if isinstance(statement, str) or (args and isinstance(args[0], list)):
            continue
        compiled = statement.compile(dialect=rt.engine.dialect, compile_kwargs={"render_postcompile": True})
        params = compiled.params
        print(f"\n--- {wall * 1000:.1f} ms: {str(compiled)[:300]} ...")
        async with rt.engine.connect() as conn:
            trans = await conn.begin()
            raw = await conn.get_raw_connection()
            sql = str(compiled)
            names = list(compiled.positiontup or [])
            values = [params[n] for n in names]
            rows = await raw.driver_connection.fetch(  # type: ignore[union-attr]
                "EXPLAIN (ANALYZE, BUFFERS) " + sql, *values
            )
            for r in rows:
                print(r[0])
            await trans.rollback()


if __name__ == "__main__":
    asyncio.run(main())
