"""Why SQLite stores an import's leads at half the speed in the service that it does alone (issue 31).

The same 5,000-row inserts into `leads` (the real schema, from the migrations, in a fresh file holding
`--prefill` leads first), as the merge writes them (one `executemany` per transaction), timed in CPU
microseconds per row of this process (`process_time`: SQLite runs in it) under each connection setting:

- `cache_size` SQLite's default (2 MB) or the service's 64 MB;
- `other writer`: another connection commits a one-row write between two parts, as the requests (chunks
  appended to the queue) and the other workers do in the service. In WAL mode a connection that finds the
  database changed by another connection since its last transaction empties its whole page cache
  (`pager_reset`), so every index page the next part touches is read again;
- `mmap_size`: pages read through a memory map instead of `read()` into the cache;
- `synchronous` NORMAL or FULL, `temp_store` FILE or MEMORY.

First it prints what a connection of the service's engine (`db/engine.py:create_engine`, the one the import
worker's process merges through) runs with: `cache_size`, `mmap_size`, `synchronous`, `temp_store`.

    .venv/bin/python bench/sqlite_gap.py [--prefill 200000] [--parts 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from import_ceiling import COLUMNS, rows

from outreach_core.kernel.db.engine import create_engine
from outreach_core.kernel.db.migrate import migrate

SETTINGS: list[tuple[str, dict[str, str], bool]] = [
    ("cache 2 MB (SQLite's default)", {"cache_size": "-2000"}, False),
    ("cache 64 MB (the service's)", {"cache_size": "-65536"}, False),
    ("cache 2 MB, other writer between parts", {"cache_size": "-2000"}, True),
    ("cache 64 MB, other writer between parts", {"cache_size": "-65536"}, True),
    ("cache 512 MB, other writer between parts", {"cache_size": "-524288"}, True),
    ("cache 64 MB, other writer, mmap 1 GB", {"cache_size": "-65536", "mmap_size": "1073741824"}, True),
    ("cache 64 MB, mmap 1 GB, no other writer", {"cache_size": "-65536", "mmap_size": "1073741824"}, False),
    ("... other writer, mmap 1 GB, synchronous FULL", {"cache_size": "-65536", "mmap_size": "1073741824", "synchronous": "FULL"}, True),
    ("... other writer, mmap 1 GB, temp_store FILE", {"cache_size": "-65536", "mmap_size": "1073741824", "temp_store": "FILE"}, True),
]  # fmt: skip


def connect(path: str, pragmas: dict[str, str]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    base = {"journal_mode": "WAL", "synchronous": "NORMAL", "temp_store": "MEMORY", "busy_timeout": "15000"}
    for name, value in {**base, **pragmas}.items():
        conn.execute(f"PRAGMA {name}={value}")
    return conn


SERVICE_PRAGMAS = (
    "cache_size",
    "mmap_size",
    "synchronous",
    "temp_store",
    "page_size",
    "journal_mode",
    "wal_autocheckpoint",
)


async def service_pragmas(path: str) -> dict[str, object]:
    """The settings of a connection made as the service (and its worker process) makes them."""
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    async with engine.connect() as conn:
        found = {name: (await conn.exec_driver_sql(f"PRAGMA {name}")).scalar() for name in SERVICE_PRAGMAS}
    await engine.dispose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefill", type=int, default=200_000)
    parser.add_argument("--parts", type=int, default=20)
    args = parser.parse_args()
    path = f"{tempfile.mkdtemp(prefix='sqlite-gap-')}/gap.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    asyncio.run(migrate(engine))
    asyncio.run(engine.dispose())
    print("the service's connection:", asyncio.run(service_pragmas(path)), flush=True)
    insert = f"INSERT INTO leads ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
    rng = random.Random(1)
    setup = connect(path, {})
    setup.execute(
        "INSERT INTO workspaces (id, name, slug, created_at) VALUES ('ws_ceiling', 'C', 'c', '2026-01-01')"
    )
    setup.execute("CREATE TABLE other_writer (n INTEGER)")
    next_row = 0
    for first in range(0, args.prefill, 5_000):
        setup.execute("BEGIN IMMEDIATE")
        setup.executemany(insert, rows(first, 5_000, rng, False))
        setup.execute("COMMIT")
        next_row = first + 5_000
    setup.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    print(f"{args.prefill:,} leads in the table; {args.parts} parts of 5,000 per setting; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)  # fmt: skip
    for name, pragmas, other_writes in SETTINGS:
        conn = connect(path, pragmas)
        spent = 0.0
        for _ in range(args.parts):
            batch = rows(next_row, 5_000, rng, False)
            next_row += 5_000
            if other_writes:
                setup.execute("INSERT INTO other_writer VALUES (1)")
            started = time.process_time()
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(insert, batch)
            conn.execute("COMMIT")
            spent += time.process_time() - started
        conn.close()
        print(f"{name:<50} {spent / (args.parts * 5_000) * 1e6:6.1f} µs CPU per row", flush=True)


if __name__ == "__main__":
    main()
