"""Analytics at scale: sends, replies and campaigns generated straight into the tables, rolled up by
`outreach analytics rebuild`, then the analytics operations timed, and what the rollups add to recording a
send and a reply.

Database from OUTREACH_DATABASE_URL (default a fresh SQLite file). Generates `--sends` ledger rows (two
emails per lead, over the last 180 days, 2 % refused as bounces) for `--campaigns` campaigns of two steps
with two variants each, from 50 mailboxes, and `--replies` replies (threads labeled positive, negative,
neutral, warning or not at all) with set-based INSERT ... SELECT (generate_series on PostgreSQL, a
recursive CTE on SQLite). Then: the rebuild (timed), p50/p95 of the overview (90 days), campaign stats,
campaign analytics (90 days) and a breakdown, each called as the doors call them (the operation in its
read-only transaction, through the runtime), and the CPU time per row of each stage. Prints Markdown for
docs/PERFORMANCE.md.

    .venv/bin/python bench/analytics_scale.py [--sends 1000000] [--replies 50000] [--campaigns 200]
    .venv/bin/python bench/analytics_scale.py --reuse [--stages] [--skip-recording]  # the database again
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import event, text

from outreach_core.analytics.operations import (
    get_analytics_overview,
    get_campaign_analytics,
    get_campaign_breakdown,
    get_campaign_stats,
)
from outreach_core.analytics.rebuild import rebuild
from outreach_core.analytics.schemas import BreakdownQuery, CampaignAnalyticsQuery, OverviewQuery, StatsQuery
from outreach_core.auth.authenticate import authenticate_api_key
from outreach_core.kernel.context import Principal, WorkspaceContext, scoped
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.db.tables import sends
from outreach_core.kernel.rollups import count_sends, sync_replies
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.workspace.setup import init_workspace

MAILBOXES = 50
HOURS = 180 * 24


def numbers(pg: bool, n: int) -> str:
    """A row source `s(i)` of 1..n."""
    if pg:
        return f"generate_series(1, {n}) AS s(i)"
    return (
        f"(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) SELECT i FROM s) s"
    )


def hours_ago(pg: bool, expr: str) -> str:
    if pg:
        return f"(now() - ({expr}) * interval '1 hour' - interval '7 minutes')"
    return f"strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ({expr}) || ' hours', '-7 minutes')"


async def generate(
    rt: Runtime, ws: str, n_sends: int, n_replies: int, n_campaigns: int, timings: dict[str, float]
) -> None:
    pg = not rt.is_sqlite
    now = "now()" if pg else "strftime('%Y-%m-%d %H:%M:%f', 'now')"
    n_leads = n_sends // 2
    statements = [
        f"""INSERT INTO campaigns (id, workspace_id, name, created_at, updated_at)
            SELECT 'cmp_' || i, '{ws}', 'Campaign ' || i, {now}, {now} FROM {numbers(pg, n_campaigns)}""",
        f"""INSERT INTO campaign_steps (id, workspace_id, campaign_id, position, created_at)
            SELECT 'stp_' || i, '{ws}', 'cmp_' || ((i - 1) / 2 + 1), (i - 1) % 2, {now}
            FROM {numbers(pg, n_campaigns * 2)}""",
        f"""INSERT INTO campaign_variants (id, workspace_id, campaign_id, step_id, position, subject, created_at)
            SELECT 'var_' || i, '{ws}', 'cmp_' || ((i - 1) / 4 + 1), 'stp_' || ((i - 1) / 2 + 1), (i - 1) % 2,
                   'Subject ' || i, {now}
            FROM {numbers(pg, n_campaigns * 4)}""",
        f"""INSERT INTO mailboxes (id, workspace_id, email, domain, provider, ramp_started_on, smtp_host,
                smtp_port, smtp_security, smtp_user, imap_host, imap_port, imap_security, imap_user,
                password_encrypted, created_at)
            SELECT 'mbx_' || i, '{ws}', 'box' || i || '@bench.test', 'bench.test', 'smtp', '2026-01-01',
                   'smtp.bench.test', 465, 'tls', 'box' || i, 'imap.bench.test', 993, 'tls', 'box' || i, 'x', {now}
            FROM {numbers(pg, MAILBOXES)}""",
        f"""INSERT INTO leads (id, workspace_id, email, domain, custom, esp, country, timezone, created_at)
            SELECT 'lead_' || i, '{ws}', 'p' || i || '@lead' || (i % 1000) || '.example',
                   'lead' || (i % 1000) || '.example', '{{}}',
                   CASE i % 4 WHEN 0 THEN 'google' WHEN 1 THEN 'microsoft' WHEN 2 THEN 'other' ELSE 'unknown' END,
                   CASE i % 5 WHEN 0 THEN 'DE' WHEN 1 THEN 'US' WHEN 2 THEN 'FR' WHEN 3 THEN 'GB' ELSE NULL END,
                   CASE i % 3 WHEN 0 THEN 'America/New_York' WHEN 1 THEN 'Europe/Berlin' ELSE NULL END, {now}
            FROM {numbers(pg, n_leads)}""",
        # send i: lead (i + 1) / 2, step (i + 1) % 2, campaign lead % campaigns, variant by lead parity
        f"""INSERT INTO sends (id, workspace_id, campaign_id, lead_id, mailbox_id, step_id, step, variant_id,
                message_id, to_email, subject, body_html, body_text, status, attempts, created_at, sent_at)
            SELECT 'snd_' || i, '{ws}', 'cmp_' || (((i + 1) / 2) % {n_campaigns} + 1), 'lead_' || ((i + 1) / 2),
                   'mbx_' || (i % {MAILBOXES} + 1),
                   'stp_' || ((((i + 1) / 2) % {n_campaigns}) * 2 + (i + 1) % 2 + 1), (i + 1) % 2,
                   'var_' || ((((i + 1) / 2) % {n_campaigns}) * 4 + ((i + 1) % 2) * 2 + ((i + 1) / 2) % 2 + 1),
                   '<' || i || '@bench.test>', 'x@lead.example', 's', 'b', 'b',
                   CASE WHEN i % 50 = 0 THEN 'bounced' ELSE 'sent' END, 1,
                   {hours_ago(pg, f"(((i + 1) / 2) * 7 + (i + 1) % 2 * 48) % {HOURS}")},
                   {hours_ago(pg, f"(((i + 1) / 2) * 7 + (i + 1) % 2 * 48) % {HOURS}")}
            FROM {numbers(pg, n_sends)}""",
    ]
    for i, kind in enumerate(("positive", "negative", "neutral", "warning")):
        statements.append(
            f"""INSERT INTO labels (id, workspace_id, name, type, triggers, created_at)
                VALUES ('lbl_bench{i}', '{ws}', 'Bench {kind}', '{kind}', '{{}}', {now})"""
        )
    # reply j answers send 2 * (j * stride) - 1 + j % 2 (a first email or a follow-up) of lead j * stride
    stride = max(1, n_leads // max(1, n_replies))
    statements += [
        f"""INSERT INTO threads (id, workspace_id, conversation, lead_id, campaign_id, mailbox_id, kind, label_id,
                last_message_at, created_at)
            SELECT 'thr_' || i, '{ws}', 'c' || i, 'lead_' || (i * {stride}),
                   'cmp_' || ((i * {stride}) % {n_campaigns} + 1), NULL, 'reply',
                   CASE i % 5 WHEN 4 THEN NULL ELSE 'lbl_bench' || (i % 5) END, {now}, {now}
            FROM {numbers(pg, n_replies)}""",
        f"""INSERT INTO inbox_messages (id, workspace_id, thread_id, mailbox_id, direction, kind, to_emails,
                send_id, source, arrived_at, created_at)
            SELECT 'msg_' || i, '{ws}', 'thr_' || i, 'mbx_1', 'in', 'reply', '[]',
                   'snd_' || (2 * i * {stride} - 1 + i % 2), 'rules',
                   {hours_ago(pg, f"(i * {stride} * 7) % {HOURS}")}, {now}
            FROM {numbers(pg, n_replies)}""",
    ]
    bulk = ("sends", "leads", "threads", "inbox_messages")
    async with rt.engine.connect() as conn:
        # the secondary indexes of the bulk tables are dropped and built again after the insert (one sort
        # each instead of 10 M random insertions), and the foreign-key checks are off for the load (every
        # key is generated consistent): 1 M sends took 5.6 min (SQLite) and 9.7 min (PostgreSQL) with both
        if pg:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
        else:  # outside any transaction (this engine's connections BEGIN themselves); the load is one
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            await driver.execute("PRAGMA foreign_keys=OFF")
        if pg:
            found = await conn.execute(
                text(
                    """SELECT i.indexname, i.indexdef FROM pg_indexes i
                       WHERE i.schemaname = 'public' AND i.tablename = ANY(:t)
                         AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)"""
                ),
                {"t": list(bulk)},
            )
        else:
            found = await conn.execute(
                text(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN "
                    + "("
                    + ", ".join(f"'{t}'" for t in bulk)
                    + ")"
                )
            )
        indexes = [(r[0], r[1]) for r in found]
        for name, _ in indexes:
            await conn.execute(text(f'DROP INDEX "{name}"'))
        if pg:
            await conn.execute(text("SET session_replication_role = replica"))
            await conn.execute(text("SET synchronous_commit = off"))
            await conn.execute(text("SET maintenance_work_mem = '512MB'"))
        t0, c0 = time.perf_counter(), time.process_time()
        for sql in statements:
            await conn.execute(text(sql))
        timings["insert"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _, sql in indexes:
            await conn.execute(text(sql))
        timings["index"] = time.perf_counter() - t0
        await conn.execute(text("ANALYZE"))
        if pg:
            await conn.execute(text("SET session_replication_role = origin"))
        else:
            await conn.commit()
            await driver.execute("PRAGMA foreign_keys=ON")
        timings["indexes"] = len(indexes)


def percentile(samples: list[float], q: int) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def server_cpu(rt: Runtime) -> float:
    """CPU seconds used so far by the PostgreSQL server processes of this database (they run on this
    machine: read from /proc); 0 on SQLite, whose work is in this process's CPU already."""
    if rt.is_sqlite:
        return 0.0
    async with rt.engine.connect() as conn:
        pids = [
            r[0]
            for r in await conn.execute(
                text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            )
        ]
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


async def timed(
    fn: Callable[[], Awaitable[Any]], samples: int, rt: Runtime
) -> tuple[float, float, float, float]:
    """p50, p95 (ms, wall), CPU ms per call of this process and of the database server."""
    await fn()
    walls: list[float] = []
    server0 = await server_cpu(rt)
    cpu0 = time.process_time()
    for _ in range(samples):
        t0 = time.perf_counter()
        await fn()
        walls.append((time.perf_counter() - t0) * 1000)
    cpu = (time.process_time() - cpu0) * 1000 / samples
    server = (await server_cpu(rt) - server0) * 1000 / samples
    return statistics.median(walls), percentile(walls, 95), cpu, server


async def recording_cost(rt: Runtime, principal: Any, rounds: int) -> list[tuple[str, float, float, float]]:
    """The time of a transaction that resolves a send (status and sent_at), with and without the rollups'
    `count_sends`; and `sync_replies` of one lead on its own."""

    async def resolve(ctx: WorkspaceContext, send_id: str, rollup: bool) -> None:
        await ctx.conn.execute(
            scoped(ctx, sends).update().where(sends.c.id == send_id).values(status="sent", sent_at=ctx.now)
        )
        if rollup:
            await count_sends(ctx, [send_id])

    async def resolve_many(ctx: WorkspaceContext, send_ids: list[str], rollup: bool) -> None:
        await ctx.conn.execute(
            scoped(ctx, sends).update().where(sends.c.id.in_(send_ids)).values(status="sent", sent_at=ctx.now)
        )
        if rollup:
            await count_sends(ctx, send_ids)

    async def reply(ctx: WorkspaceContext, lead_id: str) -> None:
        await sync_replies(ctx, [lead_id])

    out = []
    for label, rollup in (
        ("resolve a send, without rollups", False),
        ("resolve a send, with count_sends", True),
    ):
        walls, c0 = [], time.process_time()
        for k in range(rounds):
            t0 = time.perf_counter()
            await rt.execute(principal, resolve, f"snd_{2 * k + 3 + (0 if rollup else 2 * rounds)}", rollup)
            walls.append((time.perf_counter() - t0) * 1000)
        cpu = (time.process_time() - c0) * 1000 / rounds
        out.append((label, statistics.median(walls), percentile(walls, 95), cpu))
    batch = 50  # the sender resolves a batch of hand-offs per transaction: one count_sends for all
    for label, rollup in (
        ("resolve 50 sends, without rollups", False),
        ("resolve 50 sends, with count_sends", True),
    ):
        walls, c0 = [], time.process_time()
        for k in range(rounds // 5):
            first = 1001 + (k * 2 + (1 if rollup else 0)) * batch * 2
            ids = [f"snd_{first + 2 * j}" for j in range(batch)]
            t0 = time.perf_counter()
            await rt.execute(principal, resolve_many, ids, rollup)
            walls.append((time.perf_counter() - t0) * 1000)
        cpu = (time.process_time() - c0) * 1000 / (rounds // 5)
        out.append((label, statistics.median(walls), percentile(walls, 95), cpu))
    walls, c0 = [], time.process_time()
    for k in range(rounds):
        t0 = time.perf_counter()
        await rt.execute(principal, reply, f"lead_{k + 1}")
        walls.append((time.perf_counter() - t0) * 1000)
    cpu = (time.process_time() - c0) * 1000 / rounds
    out.append(
        (
            "sync_replies of one lead (its own transaction)",
            statistics.median(walls),
            percentile(walls, 95),
            cpu,
        )
    )
    return out


async def reused(rt: Runtime) -> tuple[str, Principal]:
    """The workspace an earlier run generated (slug `bench`) and its owner, acting as through an API key."""
    async with rt.engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    """SELECT w.id AS ws, m.user_id, k.id AS key FROM workspaces w
                       JOIN members m ON m.workspace_id = w.id AND m.role = 'owner'
                       JOIN api_keys k ON k.workspace_id = w.id WHERE w.slug = 'bench'"""
                )
            )
        ).one()
    return row.ws, Principal(
        user_id=row.user_id, workspace_id=row.ws, role="owner", auth="api_key", credential_id=row.key
    )


class Statements:
    """Each SQL statement a request runs, with its wall time (driver round trip and server work), through
    SQLAlchemy's cursor events; what is left of the request's wall time is Python (and BEGIN/COMMIT)."""

    def __init__(self, rt: Runtime) -> None:
        self.on = False
        self.seen: list[tuple[str, Any, float]] = []
        self._t0 = 0.0
        sync = rt.engine.sync_engine
        event.listen(sync, "before_cursor_execute", self._before)
        event.listen(sync, "after_cursor_execute", self._after)

    def _before(self, *_: Any) -> None:
        self._t0 = time.perf_counter()

    def _after(self, _conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if self.on:
            self.seen.append((statement, parameters, (time.perf_counter() - self._t0) * 1000))


async def stages(
    rt: Runtime, label: str, fn: Callable[[], Awaitable[Any]], samples: int, watch: Statements
) -> None:
    """The request's statements (count, mean ms each, their plan) and its time outside them."""
    await fn()
    per: dict[str, list[float]] = {}
    params: dict[str, Any] = {}
    walls, sql = [], []
    for _ in range(samples):
        watch.seen, watch.on = [], True
        t0 = time.perf_counter()
        await fn()
        walls.append((time.perf_counter() - t0) * 1000)
        watch.on = False
        sql.append(sum(ms for _, _, ms in watch.seen))
        for i, (statement, parameters, ms) in enumerate(watch.seen):
            per.setdefault(f"{i:02d} {statement}", []).append(ms)
            params[f"{i:02d} {statement}"] = parameters
    n = len(per)
    outside = statistics.median(w - s for w, s in zip(walls, sql, strict=True))
    print(
        f"\n#### {label}: {n} statements; wall p50 {statistics.median(walls):.1f} ms, of which SQL "
        f"{statistics.median(sql):.1f} ms, outside SQL {outside:.1f} ms\n"
    )
    for key, times in per.items():
        statement = " ".join(key[3:].split())
        print(f"- {statistics.median(times):.2f} ms: `{statement[:220]}`")
    if os.environ.get("BENCH_PLANS"):
        async with rt.engine.connect() as conn:
            for key in per:
                statement, parameters = key[3:], params[key]
                if not statement.lstrip().upper().startswith("SELECT"):
                    continue
                prefix = "EXPLAIN QUERY PLAN " if rt.is_sqlite else "EXPLAIN (ANALYZE, BUFFERS) "
                plan = await conn.exec_driver_sql(prefix + statement, parameters)
                print("\n```\n" + " ".join(statement.split())[:300])
                for row in plan:
                    print("  " + " | ".join(str(c) for c in row))
                print("```")


async def main(args: argparse.Namespace) -> None:
    url = os.environ.get("OUTREACH_DATABASE_URL") or (
        f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='analytics-bench-')}/bench.db"
    )
    rt = Runtime(Settings(database_url=url, secret_key="bench-secret-key"))
    if args.reuse:
        t0 = time.perf_counter()
        if not args.no_migrate:  # a later migration (0031: the weekly rollups) on the generated data
            await migrate(rt.engine)
        print(f"Migrated (to the newest revision) in {time.perf_counter() - t0:.1f} s\n", flush=True)
        async with rt.engine.connect() as conn:  # as autovacuum leaves them (index-only scans)
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text("VACUUM ANALYZE analytics_counters" if not rt.is_sqlite else "ANALYZE"))
        _, principal = await reused(rt)
        await requests(rt, principal, args)
        await rt.dispose()
        return
    if not rt.is_sqlite:
        async with rt.engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    await migrate(rt.engine)
    made = await rt.system(
        init_workspace, email="bench@bench.test", name="Bench", workspace="Bench", slug="bench", plan="agency"
    )
    ws = made.workspaceId
    principal = await rt.system_read(authenticate_api_key, made.apiKey)
    engine = "PostgreSQL" if not rt.is_sqlite else "SQLite"
    print(
        f"### Analytics at {args.sends:,} sends, {args.replies:,} replies, {args.campaigns} campaigns ({engine})\n"
    )
    c0, t0 = time.process_time(), time.perf_counter()
    timings: dict[str, float] = {}
    await generate(rt, ws, args.sends, args.replies, args.campaigns, timings)
    gen_s = time.perf_counter() - t0
    print(f"Generated in {gen_s:.1f} s: {timings}", flush=True)
    print(f"Load average after generating: {os.getloadavg()}", flush=True)
    c1, t1, s1 = time.process_time(), time.perf_counter(), await server_cpu(rt)
    done = await rt.system(rebuild, ws)
    rebuild_s, rebuild_cpu = time.perf_counter() - t1, time.process_time() - c1
    rebuild_server = await server_cpu(rt) - s1
    print(f"Load average after the rebuild: {os.getloadavg()}", flush=True)
    async with (
        rt.engine.connect() as conn
    ):  # fresh statistics, as autovacuum (or SQLite's refresh) leaves them
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE analytics_counters" if not rt.is_sqlite else "ANALYZE"))
    print("| stage | wall | rows | per row |")
    print("|---|---|---|---|")
    print(
        f"| generate (set-based SQL, database time) | {gen_s:.1f} s | {args.sends:,} sends | "
        f"{gen_s / args.sends * 1e6:.1f} µs wall |"
    )
    print(
        f"| of which: insert {timings['insert']:.1f} s, build {timings['indexes']:.0f} indexes "
        f"{timings['index']:.1f} s, ANALYZE the rest | | | |"
    )
    print(
        f"| `outreach analytics rebuild` | {rebuild_s:.1f} s | {done[0].sends:,} sends, {done[0].replies:,} "
        f"replies | {rebuild_s / max(1, done[0].sends) * 1e6:.1f} µs wall, "
        f"{rebuild_cpu / max(1, done[0].sends) * 1e6:.1f} µs CPU here, server CPU {rebuild_server:.1f} s "
        "(connections alive at the end) |"
    )
    async with rt.engine.connect() as conn:
        rows = (await conn.execute(text("SELECT count(*) FROM analytics_counters"))).scalar_one()
    print(f"\nRollup rows: {rows:,} (generation CPU of this process {c1 - c0:.1f} s).\n")
    await requests(rt, principal, args)
    await rt.dispose()


async def requests(rt: Runtime, principal: Any, args: argparse.Namespace) -> None:
    print(f"Load average before the requests: {os.getloadavg()}\n")
    calls: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        (
            "overview, 90 days",
            lambda: rt.read(principal, get_analytics_overview, query=OverviewQuery(days=90)),
        ),
        (
            "overview, 30 days",
            lambda: rt.read(principal, get_analytics_overview, query=OverviewQuery(days=30)),
        ),
        (
            "campaign stats, all, 90 days",
            lambda: rt.read(principal, get_campaign_stats, query=StatsQuery(days=90)),
        ),
        (
            "campaign stats, one campaign, 90 days",
            lambda: rt.read(principal, get_campaign_stats, query=StatsQuery(days=90, campaignId="cmp_7")),
        ),
        (
            "campaign analytics, 90 days",
            lambda: rt.read(principal, get_campaign_analytics, query=CampaignAnalyticsQuery(days=90)),
        ),
        (
            "breakdown of a campaign",
            lambda: rt.read(principal, get_campaign_breakdown, id="cmp_7", query=BreakdownQuery()),
        ),
    ]
    if args.stages:
        watch = Statements(rt)
        for label, fn in calls:
            await stages(rt, label, fn, args.samples, watch)
        return
    print(
        "| request (operation in its read-only transaction) | p50 ms | p95 ms | CPU ms/request (this process) "
        "| server CPU ms/request |"
    )
    print("|---|---|---|---|---|")
    for label, fn in calls:
        p50, p95, cpu, server = await timed(fn, args.samples, rt)
        print(f"| {label} | {p50:.1f} | {p95:.1f} | {cpu:.1f} | {server:.1f} |", flush=True)
    print(f"\nLoad average after the requests: {os.getloadavg()}\n")
    if not args.skip_recording:
        print("\n| recording (one transaction) | p50 ms | p95 ms | CPU ms |")
        print("|---|---|---|---|")
        for label, p50, p95, cpu in await recording_cost(rt, principal, args.samples * 5):
            print(f"| {label} | {p50:.2f} | {p95:.2f} | {cpu:.2f} |", flush=True)
    if rt.is_sqlite and args.drop_cover:  # the same without SQLite's covering index (migration 0030)
        async with rt.engine.begin() as conn:
            await conn.execute(text("DROP INDEX ix_analytics_counters_cover"))
            await conn.execute(text("ANALYZE"))
        print("\nWithout the covering index `ix_analytics_counters_cover`:\n")
        print("| request | p50 ms | p95 ms | CPU ms/request |")
        print("|---|---|---|---|")
        for label, fn in calls:
            if label.startswith(("campaign analytics", "overview, 90")):
                p50, p95, cpu, _ = await timed(fn, args.samples, rt)
                print(f"| {label} | {p50:.1f} | {p95:.1f} | {cpu:.1f} |", flush=True)
        if not args.skip_recording:
            print("\n| recording (one transaction) | p50 ms | p95 ms | CPU ms |")
            print("|---|---|---|---|")
            for label, p50, p95, cpu in await recording_cost(rt, principal, args.samples * 5):
                print(f"| {label} | {p50:.2f} | {p95:.2f} | {cpu:.2f} |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sends", type=int, default=1_000_000)
    parser.add_argument("--replies", type=int, default=50_000)
    parser.add_argument("--campaigns", type=int, default=200)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--skip-recording", action="store_true")
    parser.add_argument(
        "--drop-cover",
        action="store_true",
        help="SQLite: at the end, drop the covering index of migration 0030 and time the requests again",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="time the requests on the database an earlier run generated"
    )
    parser.add_argument(
        "--no-migrate",
        action="store_true",
        help="with --reuse: leave the schema as it is (code older than the database's revision)",
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="each request's SQL statements and its time outside them (BENCH_PLANS=1: their plans too)",
    )
    asyncio.run(main(parser.parse_args()))
