"""The send forecast at scale: one campaign with 100,000 leads and 100 mailboxes (issue 28: within 1 s).

1. Seeds a database (OUTREACH_DATABASE_URL, default a fresh SQLite file): one workspace on the agency plan,
   N mailboxes in four kinds (ramping or not, three time zones, different gaps), one running campaign of
   three steps (waitDays 3 and 4) on weekdays 09:00-17:00 with a dailyCap, M leads in twelve time zones;
   a quarter of them already had their first email (follow-ups due at many different times over the next
   days), a few are unsubscribed or invalid (the stop rules leave them out).
2. Times `forecast_campaign` as a request runs it (`Runtime.read`: one read-only transaction), split into
   its stages: reading the facts (set-based SQL), the simulation, the whole; wall time and CPU time.

    .venv/bin/python bench/forecast.py [--mailboxes 100] [--leads 100000] [--runs 7]
    OUTREACH_DATABASE_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/DB .venv/bin/python bench/forecast.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _seed import (  # noqa: E402
    add_campaign,
    add_campaign_leads,
    assign_mailboxes,
    bench_lead,
    bench_mailbox,
    bench_workspace,
)
from sqlalchemy import text  # noqa: E402

from outreach_core.campaigns.forecast import forecast_campaign, forecast_facts  # noqa: E402
from outreach_core.campaigns.forecast_rules import forecast  # noqa: E402
from outreach_core.campaigns.store import campaign_row  # noqa: E402
from outreach_core.kernel.context import Principal, WorkspaceContext  # noqa: E402
from outreach_core.kernel.db.migrate import migrate  # noqa: E402
from outreach_core.kernel.db.tables import (  # noqa: E402
    campaigns,  # noqa: E402
    mailboxes,
)
from outreach_core.kernel.runtime import Runtime  # noqa: E402
from outreach_core.kernel.settings import Settings  # noqa: E402

CID = "cmp_fc0001"
ZONES = (
    None,
    "UTC",
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Helsinki",
    "Asia/Kolkata",
    "Asia/Tokyo",
    "Australia/Sydney",
)
KINDS = (  # ramp, limit, zone, gaps
    (True, 50, "UTC", (60, 180)),
    (False, 40, "Europe/Berlin", (90, 240)),
    (True, 30, "America/New_York", (120, 300)),
    (False, 25, "UTC", (60, 120)),
)


async def seed(rt: Runtime, n_mailboxes: int, n_leads: int) -> tuple[str, str]:
    ws, user = await bench_workspace(rt, "forecast", "Forecast bench")
    now = datetime.now(UTC)
    box_ids = [f"mbx_fc{i:05d}" for i in range(n_mailboxes)]
    async with rt.engine.begin() as conn:
        rows = []
        for i, box in enumerate(box_ids):
            ramp, limit, zone, gaps = KINDS[i % len(KINDS)]
            rows.append(
                bench_mailbox(
                    i,
                    box,
                    ws,
                    now,
                    "127.0.0.1",
                    ramp_enabled=ramp,
                    ramp_start=5,
                    ramp_increment=2,
                    daily_limit=limit,
                    ramp_started_on=(now - timedelta(days=i % 7)).date().isoformat(),
                    timezone=zone,
                    min_gap_s=gaps[0],
                    max_gap_s=gaps[1],
                )
            )
        await conn.execute(mailboxes.insert(), rows)
        steps = [
            (wait, "Hello" if wait == 0 else "", "<p>Hi</p><p>{{unsubscribe}}</p>") for wait in (0, 3, 4)
        ]
        await add_campaign(
            conn,
            ws,
            CID,
            "fc",
            steps,
            now,
            name="Forecast bench",
            timezone_fallback="Europe/Berlin",
            window_start=9 * 60,
            window_end=17 * 60,
            days=31,
            daily_cap=2_500,
        )
        await assign_mailboxes(conn, ws, [(CID, b) for b in box_ids])

    def lead(i: int, lead_id: str) -> dict[str, Any]:
        status = "unsubscribed" if i % 97 == 0 else "active"
        return bench_lead(i, lead_id, ws, now, timezone=ZONES[i % len(ZONES)], status=status)

    def campaign_lead(i: int, cl_id: str, lead_id: str) -> dict[str, Any]:
        contacted = i % 4 == 0
        return {
            "id": cl_id,
            "workspace_id": ws,
            "campaign_id": CID,
            "lead_id": lead_id,
            "added_at": now,
            "status": "contacted" if contacted else "not_contacted",
            "step": 1 if contacted else 0,
            "next_at": now + timedelta(seconds=(i * 37) % (3 * 86_400)) if contacted else None,
        }

    await add_campaign_leads(rt, ws, n_leads, lead, campaign_lead)
    async with rt.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE" if rt.engine.dialect.name == "postgresql" else "ANALYZE"))
    return ws, user


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process on this machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ms(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1000:7.1f} ms  max {max(values) * 1000:7.1f} ms"


async def launch(rt: Runtime, caller: Principal, runs: int, engine: str) -> None:
    """`launch_campaign` as the doors run it, the campaign paused before each run: the MCP confirmation
    question (`_describe_launch`, which forecasts) and the launch (its `prepare` step forecasts in a
    read-only transaction, then the write transaction), wall and CPU (this process; on PostgreSQL the
    backends' CPU is not in it)."""
    from outreach_core.campaigns.endpoints import ENDPOINTS, _describe_launch

    endpoint = next(e for e in ENDPOINTS if e.name == "launch_campaign")

    async def pause(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(campaigns.update().where(campaigns.c.id == CID).values(status="paused"))

    async def question(ctx: WorkspaceContext) -> str:
        return await _describe_launch(ctx, CID)

    asked_wall, asked_cpu, launch_wall, launch_cpu = [], [], [], []
    answer: Any = None
    for _ in range(runs):
        await rt.execute(caller, pause)
        t, c = time.perf_counter(), time.process_time()
        text_ = await rt.read(caller, question)
        asked_wall.append(time.perf_counter() - t)
        asked_cpu.append(time.process_time() - c)
        t, c = time.perf_counter(), time.process_time()
        answer = await rt.call(caller, endpoint, id=CID)
        launch_wall.append(time.perf_counter() - t)
        launch_cpu.append(time.process_time() - c)
    print(f"  launch confirmation question ({engine}):   {_ms(asked_wall)}  CPU {_ms(asked_cpu)}")
    print(f"  launch_campaign answer:                  {_ms(launch_wall)}  CPU {_ms(launch_cpu)}")
    print(f"  question: {text_[:160]}...")
    print(f"  answer status {answer.status}, forecast leads {answer.forecast.leads:,}")
    print(f"  load average {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mailboxes", type=int, default=100)
    parser.add_argument("--leads", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    url = os.environ.get("OUTREACH_DATABASE_URL") or (
        f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='forecast-bench-')}/outreach.db"
    )
    settings = Settings(database_url=url, secret_key=os.environ.get("OUTREACH_SECRET_KEY", "bench-secret"))

    async def run() -> None:
        rt = Runtime(settings)
        engine = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
        if engine == "PostgreSQL":
            async with rt.engine.begin() as conn:
                await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
                await conn.execute(text("CREATE SCHEMA public"))
        await migrate(rt.engine)
        t0 = time.perf_counter()
        ws, user = await seed(rt, args.mailboxes, args.leads)
        print(
            f"{engine}: seeded {args.leads:,} campaign leads, {args.mailboxes} mailboxes in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        caller = Principal(user_id=user, workspace_id=ws, role="owner", auth="api_key", credential_id="bench")

        async def facts_only(ctx: WorkspaceContext) -> Any:
            return await forecast_facts(ctx, await campaign_row(ctx, CID))

        server_cpu: list[float] = []

        async def measured(ctx: WorkspaceContext) -> Any:
            """`forecast_campaign` with the PostgreSQL backend's own CPU time (same machine: /proc)."""
            if engine != "PostgreSQL":
                return await forecast_campaign(ctx, CID)
            pid = (await ctx.conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
            before = _proc_cpu(pid)
            result = await forecast_campaign(ctx, CID)
            server_cpu.append(_proc_cpu(pid) - before)
            return result

        facts_wall, sim_wall, sim_cpu, whole_wall, whole_cpu = [], [], [], [], []
        found = None
        for _ in range(args.runs):
            t = time.perf_counter()
            facts = await rt.read(caller, facts_only)
            facts_wall.append(time.perf_counter() - t)
            t, c = time.perf_counter(), time.process_time()
            forecast(facts)
            sim_wall.append(time.perf_counter() - t)
            sim_cpu.append(time.process_time() - c)
            t, c = time.perf_counter(), time.process_time()
            found = await rt.read(caller, measured)
            whole_wall.append(time.perf_counter() - t)
            whole_cpu.append(time.process_time() - c)
        assert found is not None
        groups = len(facts.waiting)
        print(
            f"  facts (SQL: {groups:,} lead groups, {len(facts.mailboxes)} mailbox groups): {_ms(facts_wall)}"
        )
        print(f"  simulation ({len(found.days)} days):                 {_ms(sim_wall)}  CPU {_ms(sim_cpu)}")
        print(
            f"  forecast_campaign, whole:                           {_ms(whole_wall)}  CPU {_ms(whole_cpu)}"
        )
        if server_cpu:
            print(f"  PostgreSQL backend CPU per forecast:               {_ms(server_cpu)}")
        per_lead_us = (
            (statistics.median(whole_cpu) + (statistics.median(server_cpu) if server_cpu else 0))
            / max(1, found.leads)
            * 1e6
        )
        print(
            f"  CPU per waiting lead: {per_lead_us:.2f} µs; leads {found.leads:,}, "
            f"last first email {found.last_first_email_on}, last email {found.last_email_on}, "
            f"limitedBy {found.limited_by}"
        )
        print(f"  {found.message}")
        await launch(rt, caller, args.runs, engine)
        await rt.dispose()

    asyncio.run(run())


if __name__ == "__main__":
    main()
