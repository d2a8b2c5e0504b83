"""The warmup pool's pass at scale: N mailboxes (default 1,000) in 100 workspaces, all with warmup on.

Times `warmup.pool.plan_and_claim` (one transaction, what the `warmup` worker's pass starts with):

- `plan a day`: every mailbox's local day changed (the first pass of a day): all N rows re-planned and
  written, nothing due yet;
- `plan, nothing due`: the same day again (what most passes are): N rows read, nothing written;
- `plan + claim`: every mailbox due: the day checked and `OUTREACH_WARMUP_BATCH` (200) emails claimed,
  written to `warmup_messages` and counted in the mailboxes' daily sends.

Prints wall time and CPU time of this process (the database's own CPU on PostgreSQL is not in it) per pass
and per mailbox. No SMTP: the hand-offs are the sender's path (`bench/sender_scale.py`).

    .venv/bin/python bench/warmup_plan.py [--mailboxes 1000] [--passes 5]
    OUTREACH_DATABASE_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/DB \
        .venv/bin/python bench/warmup_plan.py
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402

from outreach_core.kernel.crypto import encrypt  # noqa: E402
from outreach_core.kernel.db.migrate import migrate  # noqa: E402
from outreach_core.kernel.db.tables import mailboxes, warmup_mailboxes, warmup_messages  # noqa: E402
from outreach_core.kernel.ports import FixedClock, Ports  # noqa: E402
from outreach_core.kernel.runtime import Runtime  # noqa: E402
from outreach_core.kernel.settings import Settings  # noqa: E402
from outreach_core.warmup.pool import plan_and_claim  # noqa: E402
from outreach_core.workspace.setup import init_workspace  # noqa: E402

WORKSPACES = 100


async def seed(rt: Runtime, n: int, today: str) -> None:
    secret = encrypt(rt.settings, "bench-password")
    ws_ids = []
    for k in range(WORKSPACES):
        made = await rt.system(
            init_workspace,
            email=f"warm-{os.getpid()}-{k}@example.com",
            name="Bench",
            workspace=f"Warmup bench {k}",
            slug=f"warm-bench-{os.getpid()}-{k}",
            plan="agency",
        )
        ws_ids.append(made.workspaceId)
    now = datetime.now(UTC)
    boxes = [
        {
            "id": f"mbx_wb{i:05d}",
            "workspace_id": ws_ids[i % WORKSPACES],
            "email": f"warm{i}@bench{i % 37}.test",
            "domain": f"bench{i % 37}.test",
            "display_name": f"Sender {i}",
            "provider": "smtp",
            "ramp_enabled": False,
            "daily_limit": 100,
            "ramp_started_on": "2026-01-01",
            "timezone": ("UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo")[i % 4],
            "smtp_host": "127.0.0.1",
            "smtp_port": 2525,
            "smtp_security": "starttls",
            "smtp_user": f"warm{i}@bench.test",
            "imap_host": "127.0.0.1",
            "imap_port": 993,
            "imap_security": "tls",
            "imap_user": f"warm{i}@bench.test",
            "password_encrypted": secret,
            "created_at": now,
        }
        for i in range(n)
    ]
    warm = [
        {
            "mailbox_id": b["id"],
            "workspace_id": b["workspace_id"],
            "enabled": True,
            "target": 40,
            "ramp_start": 10,
            "ramp_increment": 5,
            "reply_rate": 30,
            "started_on": today,
        }
        for b in boxes
    ]
    async with rt.engine.begin() as conn:
        await conn.execute(mailboxes.insert(), boxes)
        await conn.execute(warmup_mailboxes.insert(), warm)


async def timed(rt: Runtime, passes: int, before: object = None) -> list[tuple[float, float, int, int]]:
    out = []
    for _ in range(passes):
        if before is not None:
            async with rt.engine.begin() as conn:
                await conn.execute(before)  # type: ignore[arg-type]
        t0, c0 = time.perf_counter(), time.process_time()
        claimed = await rt.system(plan_and_claim)
        out.append((time.perf_counter() - t0, time.process_time() - c0, claimed.planned, len(claimed.jobs)))
    return out


def report(engine: str, what: str, n: int, rows: list[tuple[float, float, int, int]]) -> None:
    wall = statistics.median(r[0] for r in rows)
    cpu = statistics.median(r[1] for r in rows)
    print(
        f"| {engine} | {what} | {n:,} | {rows[0][2]:,} | {rows[0][3]:,} | {wall * 1000:.0f} | "
        f"{max(r[0] for r in rows) * 1000:.0f} | {cpu * 1e6 / n:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mailboxes", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    url = os.environ.get("OUTREACH_DATABASE_URL") or (
        f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='warmup-bench-')}/outreach.db"
    )
    settings = Settings(database_url=url, secret_key="bench-secret", warmup_min_gap_s=0)
    start = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    clock = FixedClock(start)

    async def run() -> None:
        rt = Runtime(settings, ports=Ports(clock=clock))
        engine = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
        if engine == "PostgreSQL":
            async with rt.engine.begin() as conn:
                await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
                await conn.execute(text("CREATE SCHEMA public"))
        await migrate(rt.engine)
        await seed(rt, args.mailboxes, (start - timedelta(days=3)).date().isoformat())
        n = args.mailboxes
        print("| engine | pass | mailboxes | rows written | claimed | median ms | max ms | CPU µs/mailbox |")
        print("|---|---|---|---|---|---|---|---|")
        day_change = []
        for k in range(args.passes):  # each pass a new day: every row re-planned
            clock.set(start + timedelta(days=k + 1))
            day_change += await timed(rt, 1)
        report(engine, "plan a day", n, day_change)
        report(engine, "plan, nothing due", n, await timed(rt, args.passes))
        due = warmup_mailboxes.update().values(next_at=None)
        report(engine, "plan + claim", n, await timed(rt, args.passes, due))
        async with rt.engine.begin() as conn:
            count = (await conn.execute(text("SELECT count(*) FROM warmup_messages"))).scalar_one()
        print(f"warmup emails claimed in all: {count:,} ({warmup_messages.name})")
        await rt.dispose()

    asyncio.run(run())


if __name__ == "__main__":
    main()
