"""Where the import worker's time goes per stage of PostgreSQL's merge of a part (issue 31, branch pgpipe).

PostgreSQL only, on a scratch database (OUTREACH_DATABASE_URL; migrated here): `--parts` 5,000-row parts of
new addresses (rows as `bench/import_e2e.py` makes them) are queued through `import_leads`, then merged one
by one by `merge_queued_rows`, the import worker's operation, in this process with the worker's collector
thresholds. The functions it calls are wrapped with timers here (module attributes replaced; nothing in the
product's code path): per stage, wall and this process's CPU (`process_time`) in µs a row, inclusive of
the stages nested in it; wall minus CPU is waiting on the database. The part's read and its decode into
row dicts (`stored_row`) are timed by reading each part once more before it is merged, on its own.

    OUTREACH_DATABASE_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/scratch_x \
        .venv/bin/python bench/import_merge_stages.py [--parts 20] [--existing skip|update]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _seed import bench_workspace
from import_e2e import row

from outreach_app.cli import WORKER_GC_THRESHOLD
from outreach_core.imports import merge, staged_merge
from outreach_core.imports.operations import import_leads
from outreach_core.imports.schemas import ImportIn, stored_row
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.db.tables import import_queue
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings

PART = 5_000
SPENT: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])

STAGES: list[tuple[Any, str, str]] = [
    (merge, "merge_queued_rows", "merge_queued_rows (the whole transaction's work, before commit)"),
    (merge, "_claim", "  claim (advisory lock)"),
    (merge, "hold_workspace", "  hold the workspace"),
    (merge, "_merge", "  _merge (normalise, deduplicate, then merge_staged)"),
    (merge, "merge_staged", "    merge_staged"),
    (staged_merge, "suppressed_emails", "      suppression"),
    (staged_merge, "contacts_room", "      contacts room"),
    (staged_merge, "_known_leads", "      known leads (look-up)"),
    (staged_merge, "_stage_new_leads", "      _stage_new_leads"),
    (staged_merge, "new_lead_rows", "        new_lead_rows"),
    (staged_merge, "enrich_new_leads", "        enrich_new_leads"),
    (staged_merge, "_stage", "        COPY into staging (records built + COPY)"),
    (staged_merge, "lock_list", "      lock the list"),
    (staged_merge, "_store_staged", "      INSERT ... SELECT FROM staging (the database's work)"),
    (staged_merge, "_update_staged", "      _update_staged (existing: update)"),
    (staged_merge, "insert_rows", "      insert_rows (COPY: staging, import_seen)"),
    (staged_merge, "add_known_leads_to_list", "      add_known_leads_to_list"),
    (merge, "close_if_merged", "  close_if_merged"),
]


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(fn):

        async def wrapper_async(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return await fn(*args, **kwargs)
            finally:
                SPENT[name][0] += time.perf_counter() - wall
                SPENT[name][1] += time.process_time() - cpu
                SPENT[name][2] += 1

        return wrapper_async

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[name][0] += time.perf_counter() - wall
            SPENT[name][1] += time.process_time() - cpu
            SPENT[name][2] += 1

    return wrapper


async def read_part(ctx: WorkspaceContext, import_id: str) -> int:
    """The oldest part's read and decode, as `merge_queued_rows` does it (timed on its own)."""
    wall, cpu = time.perf_counter(), time.process_time()
    part = (
        await ctx.conn.execute(
            scoped(ctx, import_queue)
            .select(import_queue.c.seq, import_queue.c.rows, import_queue.c.merged_rows)
            .where(import_queue.c.import_id == import_id)
            .order_by(import_queue.c.seq)
            .limit(1)
        )
    ).first()
    if part is None:
        return 0
    SPENT["read the part (select, JSON decode by the driver)"][0] += time.perf_counter() - wall
    SPENT["read the part (select, JSON decode by the driver)"][1] += time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    rows = [stored_row(r) for r in part.rows]
    SPENT["stored_row per row"][0] += time.perf_counter() - wall
    SPENT["stored_row per row"][1] += time.process_time() - cpu
    return len(rows)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", type=int, default=20)
    parser.add_argument("--existing", choices=["skip", "update"], default="skip")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="cProfile the measured merges (no stage timers) and write the stats to FILE (pstats)",
    )
    args = parser.parse_args()
    rt = Runtime(Settings(database_url=os.environ["OUTREACH_DATABASE_URL"]))
    await migrate(rt.engine)
    workspace_id, _ = await bench_workspace(rt, "stages", "Stages")
    principal = merge.import_principal(workspace_id)
    rounds = ["skip"] if args.existing == "skip" else ["skip", "update"]
    for existing in rounds:
        rng = random.Random(7)  # the same addresses in each round: the update round meets every lead again
        import_id: str | None = None
        for first in range(0, args.parts * PART, PART):
            body: dict[str, Any] = {
                "rows": [
                    row(i, rng, "title" if existing == "update" else None) for i in range(first, first + PART)
                ],
                "final": first + PART >= args.parts * PART,
                "existing": existing,
            }
            if import_id is None:
                body["list"] = {"name": f"Stages {existing}"}
            else:
                body["importId"] = import_id
            import_id = str((await rt.execute(principal, import_leads, ImportIn.model_validate(body))).id)
        assert import_id is not None
        if existing != rounds[-1]:
            while await rt.execute(principal, merge.merge_queued_rows):
                pass
    if args.profile:
        await profile(rt, principal, args.profile)
        await rt.dispose()
        return
    for module, name, label in STAGES:
        setattr(module, name, timed(label, getattr(module, name)))
    gc.set_threshold(*WORKER_GC_THRESHOLD)
    load = os.getloadavg()[0]
    merged = 0
    wall, cpu = time.perf_counter(), time.process_time()
    while await rt.read(principal, read_part, import_id):
        n = await rt.execute(principal, merge.merge_queued_rows)
        if not n:
            break
        merged += n
    total_wall, total_cpu = time.perf_counter() - wall, time.process_time() - cpu
    per = 1e6 / merged
    print(
        f"{merged:,} rows merged (existing: {args.existing}), load average {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print(f"{'stage':<72} {'wall µs/row':>11} {'CPU µs/row':>10} {'waiting':>8} {'calls':>6}")
    for label in [label for _, _, label in STAGES] + [
        "read the part (select, JSON decode by the driver)",
        "stored_row per row",
    ]:
        w, c, n = SPENT[label]
        print(f"{label:<72} {w * per:11.1f} {c * per:10.1f} {(w - c) * per:8.1f} {int(n):6}")
    print(
        f"{'everything (both reads of each part, transactions, commits)':<72} {total_wall * per:11.1f} {total_cpu * per:10.1f}"
    )
    await rt.dispose()


async def profile(rt: Runtime, principal: Any, path: str) -> None:
    """The worker's merges under cProfile (the part's read included, as the worker does it): the
    functions' CPU per row, by `python -m pstats FILE` or the summary printed here."""
    gc.set_threshold(*WORKER_GC_THRESHOLD)
    load = os.getloadavg()[0]
    merged = 0
    profiler = cProfile.Profile(time.process_time)
    cpu = time.process_time()
    profiler.enable()
    while n := await rt.execute(principal, merge.merge_queued_rows):
        merged += n
    profiler.disable()
    cpu = time.process_time() - cpu
    profiler.dump_stats(path)
    print(f"{merged:,} rows merged under cProfile, load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"this process's CPU {cpu * 1e6 / merged:.1f} µs a row (profiler's overhead included)")
    stats = pstats.Stats(path)
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(35)


if __name__ == "__main__":
    asyncio.run(main())
