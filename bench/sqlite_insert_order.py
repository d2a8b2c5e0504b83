"""What the order of a part's rows costs SQLite's `leads` indexes when the import merge stores it (issue 31).

The merge gives a part's new leads ids made in one millisecond (`new_ids`: the time, then random bits) and
used to insert them in the file's order, i.e. in random id order. Every index ordered by (..., created_at,
id) then receives the part's entries scattered among each other (one `created_at` for the whole part), and
so do the primary key and the list's three B-trees ordered by lead id. Inserted in id order, each of these
only appends at its right edge.

The real schema (migrations) in a fresh file holding `--prefill` leads; then `--parts` parts of 5,000 new
leads per variant, each variant on its own copy of that file, one `executemany` per transaction as the
merge writes them, in CPU microseconds per row of this process (`process_time`; SQLite runs in it).
Variants: ids in random order (before) or ascending (after), with every index, or without the four
indexes the per-piece measurement found expensive (`ix_leads_ws_verify`, `ws_status`, `ws_created`,
`ws_domain`), or without one of them.

    .venv/bin/python bench/sqlite_insert_order.py [--prefill 100000] [--parts 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from import_ceiling import COLUMNS, rows

from outreach_core.kernel.db.engine import create_engine
from outreach_core.kernel.db.migrate import migrate

FOUR = ("ix_leads_ws_verify", "ix_leads_ws_status", "ix_leads_ws_created", "ix_leads_ws_domain")
VARIANTS: list[tuple[str, tuple[str, ...]]] = [
    ("every index", ()),
    ("without the four", FOUR),
    *((f"without {name}", (name,)) for name in FOUR),
]


def connect(path: str) -> sqlite3.Connection:
    """A connection with the service's cache, journal and sync pragmas (`db/engine.py` `SQLITE_PRAGMAS`),
    without its `foreign_keys=ON` and `busy_timeout`: the figures in PERFORMANCE.md were taken so (no
    foreign-key checks, one connection), and both orders are measured alike."""
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "temp_store=MEMORY", "cache_size=-65536"):
        conn.execute(f"PRAGMA {pragma}")
    return conn


def main() -> None:
    """Prefill once, then time every variant in both orders on its own copy of the prefilled file."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefill", type=int, default=100_000)
    parser.add_argument("--parts", type=int, default=10)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="sqlite-order-")
    base = f"{folder}/base.db"
    engine = create_engine(f"sqlite+aiosqlite:///{base}")
    asyncio.run(migrate(engine))
    asyncio.run(engine.dispose())
    insert = f"INSERT INTO leads ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
    rng = random.Random(1)
    setup = connect(base)
    setup.execute(
        "INSERT INTO workspaces (id, name, slug, created_at) VALUES ('ws_ceiling', 'C', 'c', '2026-01-01')"
    )
    for first in range(0, args.prefill, 5_000):
        setup.execute("BEGIN IMMEDIATE")
        setup.executemany(insert, rows(first, 5_000, rng, False))
        setup.execute("COMMIT")
    setup.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    setup.close()
    parts = [rows(args.prefill + 5_000 * i, 5_000, rng, False) for i in range(args.parts)]
    print(f"{args.prefill:,} leads, {args.parts} parts of 5,000 per variant; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)  # fmt: skip
    for name, dropped in VARIANTS:
        spent = {}
        for order in ("random ids", "ascending ids"):
            path = f"{folder}/run.db"
            shutil.copy(base, path)
            conn = connect(path)
            for index in dropped:
                conn.execute(f"DROP INDEX {index}")
            total = 0.0
            for part in parts:
                batch = sorted(part) if order == "ascending ids" else part  # the id is the first column
                started = time.process_time()
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(insert, batch)
                conn.execute("COMMIT")
                total += time.process_time() - started
            conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(path + suffix).unlink(missing_ok=True)
            spent[order] = total / (args.parts * 5_000) * 1e6
        before, after = spent["random ids"], spent["ascending ids"]
        print(f"{name:<36} random {before:6.1f}  ascending {after:6.1f} µs CPU a row", flush=True)
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
