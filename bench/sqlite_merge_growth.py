"""Why SQLite's import merge costs more a row at 1,000,000 leads than at 200,000, per connection setting
(issue 31, branch `sqlite1m`).

A file holding `--prefill` leads is built once through the real import (chunks queued by `import_leads`,
merged by `merge_queued_rows` in this process, on one list) and checkpointed (or taken from `--base`, a file
built so before: `--keep` leaves it). Then, per variant, a copy of that file: `--parts` 5,000-row parts of
new addresses are queued as one more import into a new list, and merged and committed part by part by
`merge_queued_rows`, the import worker's operation, through a `Runtime` whose connections run the service's
pragmas (`db/engine.py`) plus the variant's. Between two parts another connection commits a one-row write,
as the worker process's other workers do (the enrich worker looks domains up while an import is stored);
`--no-other-writer` leaves it out.

Reported per variant: CPU µs a row of this process (`process_time`: SQLite's work, the commits and the WAL
checkpoints are in it), wall µs a row, the bytes this process read and wrote through system calls per row
(`/proc/self/io` `rchar`, `wchar`: page reads into SQLite's cache, WAL frames, checkpoint copies), the WAL
file's largest size after a commit, and the process's RSS growth over the merges, at its peak (`VmHWM`) and
at the end (`VmRSS`; run one variant per process for RSS: `--only`).

    .venv/bin/python bench/sqlite_merge_growth.py --prefill 1000000 --keep /tmp/base1m.db [--parts 20]
    .venv/bin/python bench/sqlite_merge_growth.py --base /tmp/base1m.db [--only mmap]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _seed import bench_workspace
from import_e2e import row
from sqlalchemy import event

from outreach_app.cli import WORKER_GC_THRESHOLD
from outreach_core.billing import rules
from outreach_core.imports import merge
from outreach_core.imports.operations import import_leads
from outreach_core.imports.schemas import ImportIn
from outreach_core.kernel.db import engine as db_engine
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings

PART = 5_000
# the agency plan's 1,000,000 contacts would turn the measured parts away above a million leads
rules.PLANS["agency"] = dataclasses.replace(rules.PLANS["agency"], contacts=100_000_000)
VARIANTS: list[tuple[str, tuple[str, ...]]] = [
    ("the service's pragmas", ()),
    ("cache 256 MB", ("PRAGMA cache_size=-262144",)),
    ("cache 512 MB", ("PRAGMA cache_size=-524288",)),
    ("cache 1 GB", ("PRAGMA cache_size=-1048576",)),
    ("mmap 4 GB", ("PRAGMA mmap_size=4294967296",)),
    ("mmap 4 GB, cache 256 MB", ("PRAGMA mmap_size=4294967296", "PRAGMA cache_size=-262144")),
    ("wal_autocheckpoint 0 (never)", ("PRAGMA wal_autocheckpoint=0",)),
    ("wal_autocheckpoint 10,000 pages", ("PRAGMA wal_autocheckpoint=10000",)),
    ("wal_autocheckpoint 25,000 pages", ("PRAGMA wal_autocheckpoint=25000",)),
    ("wal_autocheckpoint 50,000 pages", ("PRAGMA wal_autocheckpoint=50000",)),
    ("wal_autocheckpoint 100,000 pages", ("PRAGMA wal_autocheckpoint=100000",)),
    ("ckpt 25,000, cache 256 MB", ("PRAGMA wal_autocheckpoint=25000", "PRAGMA cache_size=-262144")),
    ("ckpt 50,000, cache 128 MB", ("PRAGMA wal_autocheckpoint=50000", "PRAGMA cache_size=-131072")),
    ("ckpt 50,000, cache 256 MB", ("PRAGMA wal_autocheckpoint=50000", "PRAGMA cache_size=-262144")),
    ("ckpt 100,000, cache 256 MB", ("PRAGMA wal_autocheckpoint=100000", "PRAGMA cache_size=-262144")),
    ("cache_spill off", ("PRAGMA cache_spill=0",)),
    ("the service's pragmas again", ()),
]


def io_counters() -> dict[str, int]:
    with open("/proc/self/io") as f:
        return {k: int(v) for k, v in (line.split(": ") for line in f)}


def peak_rss_kb(field: str = "VmHWM") -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))


def chunk(first: int, rng: random.Random, import_id: str | None, final: bool, list_name: str) -> ImportIn:
    body: dict[str, Any] = {
        "rows": [row(i, rng) for i in range(first, first + PART)],
        "final": final,
        "existing": "skip",
    }
    if import_id is None:
        body["list"] = {"name": list_name}
    else:
        body["importId"] = import_id
    return ImportIn.model_validate(body)


async def queue(rt: Runtime, principal: Any, first: int, count: int, rng: random.Random, name: str) -> None:
    import_id: str | None = None
    for start in range(first, first + count, PART):
        imp = chunk(start, rng, import_id, start + PART >= first + count, name)
        import_id = str((await rt.execute(principal, import_leads, imp)).id)


async def build(path: str, prefill: int, page_size: int | None) -> None:
    """The prefilled file: a workspace, `prefill` leads on one list through the real import."""
    if page_size is not None:  # before the first table; the service creates files with SQLite's 4 KB
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA page_size={page_size}")
        conn.execute("VACUUM")
        conn.close()
    rt = Runtime(Settings(database_url=f"sqlite+aiosqlite:///{path}"))
    await migrate(rt.engine)
    workspace_id, _ = await bench_workspace(rt, "growth", "Growth")
    principal = merge.import_principal(workspace_id)
    rng = random.Random(7)
    started = time.perf_counter()
    for first in range(0, prefill, 50 * PART):  # queued 50 parts at a time, then merged
        await queue(rt, principal, first, min(50 * PART, prefill - first), rng, f"Prefill {first}")
        while await rt.execute(principal, merge.merge_queued_rows):
            pass
        done = min(first + 50 * PART, prefill)
        print(f"  {done:,} leads, {time.perf_counter() - started:.0f} s", flush=True)
    await rt.dispose()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS bench_other_writer (n INTEGER)")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(path + ".workspace", "w") as f:
        f.write(workspace_id)


async def run_variant(base: str, folder: str, extra: tuple[str, ...], parts: int, other: bool) -> list[float]:
    path = f"{folder}/run.db"
    for suffix in ("", "-wal", "-shm", "-imports", "-imports-wal", "-imports-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    shutil.copy(base, path)
    workspace_id = Path(base + ".workspace").read_text()
    rt = Runtime(Settings(database_url=f"sqlite+aiosqlite:///{path}"))

    @event.listens_for(rt.engine.sync_engine, "connect")
    def _variant(dbapi_conn: Any, _record: Any) -> None:  # after the service's own pragmas
        for pragma in extra:
            dbapi_conn.execute(pragma)

    principal = merge.import_principal(workspace_id)
    rng = random.Random(11)
    await queue(rt, principal, 10_000_000, parts * PART, rng, "Measured")
    async with rt.engine.connect() as conn:  # the other writer is a connection of the service's too
        checkpoint = (await conn.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar_one()
    writer = sqlite3.connect(path, isolation_level=None)
    for pragma in (*db_engine.SQLITE_PRAGMAS, f"PRAGMA wal_autocheckpoint={checkpoint}", *extra):
        writer.execute(pragma)
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    rss0 = peak_rss_kb()
    print(f"merging (pid {os.getpid()})", file=sys.stderr, flush=True)  # a profiler may attach from here
    io0 = io_counters()
    merged, wal_max = 0, 0
    wall, cpu = time.perf_counter(), time.process_time()
    while True:
        if other:
            writer.execute("INSERT INTO bench_other_writer VALUES (1)")
        n = await rt.execute(principal, merge.merge_queued_rows)
        if not n:
            break
        merged += n
        wal = Path(path + "-wal")
        wal_max = max(wal_max, wal.stat().st_size if wal.exists() else 0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    io1 = io_counters()
    rss_after = peak_rss_kb("VmRSS")
    writer.close()
    await rt.dispose()
    assert merged >= parts * PART, merged
    return [
        cpu / merged * 1e6,
        wall / merged * 1e6,
        (io1["rchar"] - io0["rchar"]) / merged / 1024,
        (io1["wchar"] - io0["wchar"]) / merged / 1024,
        wal_max / 2**20,
        (peak_rss_kb() - rss0) / 1024,
        (rss_after - rss0) / 1024,
    ]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefill", type=int, default=200_000)
    parser.add_argument("--base", help="a file built by --keep before (its prefill)")
    parser.add_argument("--keep", help="keep the prefilled file here")
    parser.add_argument("--parts", type=int, default=20)
    parser.add_argument("--only", default="", help="run only the variants whose name contains this")
    parser.add_argument("--no-other-writer", action="store_true")
    parser.add_argument("--page-size", type=int, help="the prefilled file's page size (bytes)")
    args = parser.parse_args()
    gc.set_threshold(*WORKER_GC_THRESHOLD)
    folder = tempfile.mkdtemp(prefix="sqlite-growth-")
    base = args.base
    if base is None:
        base = args.keep or f"{folder}/base.db"
        started = time.perf_counter()
        await build(base, args.prefill, args.page_size)
        print(f"prefilled {args.prefill:,} leads in {time.perf_counter() - started:.0f} s", flush=True)
    size = Path(base).stat().st_size / 2**20
    leads = sqlite3.connect(base).execute("SELECT count(*) FROM leads").fetchone()[0]
    other = "off" if args.no_other_writer else "on"
    page = sqlite3.connect(base).execute("PRAGMA page_size").fetchone()[0]
    print(f"{leads:,} leads, file {size:,.0f} MB, {page}-byte pages; {args.parts} parts of {PART:,} per "
          f"variant; other writer {other}; load average {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    print(f"{'variant':<36} {'CPU µs/row':>10} {'wall µs/row':>11} {'read KB/row':>11} "
          f"{'write KB/row':>12} {'WAL max MB':>10} {'RSS +MB':>8} {'at end':>8}", flush=True)  # fmt: skip
    for name, extra in VARIANTS:
        if args.only and args.only not in name:
            continue
        figures = await run_variant(base, folder, extra, args.parts, not args.no_other_writer)
        cpu, wall, read, write, wal, rss, rss_after = figures
        print(f"{name:<36} {cpu:10.1f} {wall:11.1f} {read:11.1f} {write:12.1f} {wal:10.0f} {rss:8.0f} "
              f"{rss_after:8.0f}  "
              f"(load {os.getloadavg()[0]:.2f})", flush=True)  # fmt: skip
    shutil.rmtree(folder)


if __name__ == "__main__":
    asyncio.run(main())
