"""A big list's count: `GET /leads?listId=` page 1 and `GET /lists` at `--members` members; the count alone.

Writes `--members` leads into a fresh workspace (`insert_rows`: COPY on PostgreSQL), puts every one of them on
one list through the real operation (`add_leads_to_list`, target `all`: one `INSERT ... SELECT`, which fires
whatever triggers `list_leads` has), analyses, then times in this process, `--repeat` times each:

- `GET /leads?listId=` page 1 (50 leads, the default order) and `GET /lists`, over HTTP through the ASGI app
  in-process (httpx `ASGITransport`: the whole request path but the socket);
- the statement that counted the list before the kept count (`count(*)` of its `list_leads` rows) and, where
  the code has it, the kept count read (`targets.list_sizes.size_of_list`), each in a read transaction of
  the runtime.

Prints medians and p95 in ms, the add's wall seconds and µs per membership, and the load average. Runs the
code it is imported with: `main`'s from an exported tree with PYTHONPATH for "before".

    OUTREACH_DATABASE_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/bench_x \
        .venv/bin/python bench/list_count.py --members 1000000
    .venv/bin/python bench/list_count.py --members 200000          # SQLite, a fresh file
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _seed import BATCH, bench_lead
from sqlalchemy import text

from outreach_core.kernel.bulk import insert_rows
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.db.tables import leads
from outreach_core.kernel.ids import new_ids
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.lists.operations import add_leads_to_list, create_list
from outreach_core.lists.schemas import CreateListIn
from outreach_core.targets.schemas import ListTargetIn
from outreach_core.workspace.setup import init_workspace

COUNT = "SELECT count(*) FROM list_leads WHERE workspace_id = :ws AND list_id = :list"


async def timed(call: Callable[[], Awaitable[Any]], repeat: int) -> tuple[float, float]:
    """(median, p95) wall ms of `repeat` calls after one warm-up call."""
    await call()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


async def seed(rt: Runtime, principal: Any, members: int) -> tuple[str, float]:
    """`members` leads, all put on one new list; returns the list's id and the add's wall seconds."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for first in range(0, members, BATCH):
        count = min(BATCH, members - first)
        ids = new_ids("lead", count)

        async def write(ctx: WorkspaceContext, first: int = first, ids: list[str] = ids) -> None:
            rows = [
                bench_lead(first + k, lead_id, ctx.workspace_id, start + timedelta(seconds=first + k))
                for k, lead_id in enumerate(ids)
            ]
            await insert_rows(ctx, leads, rows)

        await rt.execute(principal, write)
    made = await rt.execute(principal, create_list, CreateListIn(name="Big"))
    started = time.perf_counter()
    body = ListTargetIn.model_validate({"listId": made.id, "target": {"all": True}})
    added = await rt.execute(principal, add_leads_to_list, body)
    took = time.perf_counter() - started
    assert added.added == members, added
    return made.id, took


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    url = os.environ.get("OUTREACH_DATABASE_URL") or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/count.db"
    rt = Runtime(Settings(database_url=url, log_level="WARNING", secret_key="bench-secret"))
    await migrate(rt.engine)
    made = await rt.system(
        init_workspace,
        email=f"count-{os.getpid()}@example.com",
        name="Bench",
        workspace="Count",
        slug=f"count-bench-{os.getpid()}",
        plan="agency",
    )
    workspace_id = str(made.workspaceId)
    from outreach_core.imports.merge import import_principal

    principal = import_principal(workspace_id)
    list_id, add_s = await seed(rt, principal, args.members)
    postgresql = rt.engine.dialect.name == "postgresql"
    async with rt.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql("VACUUM ANALYZE" if postgresql else "ANALYZE")

    from outreach_app.asgi import build_app

    app = build_app(rt, flush_usage=False)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # no log line per timed request
    headers = {"Authorization": f"Bearer {made.apiKey}"}
    transport = httpx.ASGITransport(app=app)
    results: dict[str, tuple[float, float]] = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:

        async def page() -> None:
            response = await http.get("/api/v1/leads", params={"listId": list_id}, headers=headers)
            assert response.status_code == 200 and response.json()["total"] == args.members, response.text

        async def lists() -> None:
            response = await http.get("/api/v1/lists", headers=headers)
            assert response.json()["lists"][0]["leads"] == args.members, response.text

        results["GET /leads?listId= page 1"] = await timed(page, args.repeat)
        results["GET /lists"] = await timed(lists, args.repeat)

    async def count(ctx: WorkspaceContext) -> int:
        found = await ctx.conn.execute(text(COUNT), {"ws": ctx.workspace_id, "list": list_id})
        return int(found.scalar_one())

    async def counted() -> None:
        assert await rt.read(principal, count) == args.members

    results["count(*) of the list's memberships"] = await timed(counted, args.repeat)
    try:
        from outreach_core.targets.list_sizes import size_of_list
    except ImportError:  # `main` before the kept count
        size_of_list = None  # type: ignore[assignment]
    if size_of_list is not None:

        async def kept() -> None:
            assert await rt.read(principal, size_of_list, list_id) == args.members

        results["the kept count (size_of_list)"] = await timed(kept, args.repeat)
    print(
        f"{rt.engine.dialect.name}, {args.members:,} members; add to list {add_s:.2f} s "
        f"({add_s / args.members * 1e6:.1f} µs a membership); load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    print("| what | median ms | p95 ms |\n|---|---:|---:|")
    for name, (median, p95) in results.items():
        print(f"| {name} | {median:.2f} | {p95:.2f} |")
    await rt.dispose()


if __name__ == "__main__":
    asyncio.run(main())
