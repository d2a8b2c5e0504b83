"""What the database engine itself allows an import: rows inserted into `leads` per second, with nothing of
ours in the way.

Creates the real schema (migrations) in a fresh SQLite file, or in OUTREACH_DATABASE_URL's PostgreSQL
database after dropping everything in it (use a database of its own), then inserts `--rows` synthetic leads straight
through the driver, in transactions of `--batch` rows, as the import merge writes them (SQLite: one
executemany; PostgreSQL: `COPY`), and prints rows/s for every 100,000. `--without` drops indexes (and on
SQLite the counter trigger) first, to show what each costs:

- `nothing`: the schema as it is (eleven indexes, the counter trigger; PostgreSQL: both trigram indexes,
  filled at once since the merge stores `search_index`);
- `search`: PostgreSQL without its two trigram GIN indexes;
- `secondary`: only the primary key and the unique address left.

The merge cannot go faster than this; `bench/import_e2e.py` measures the whole import.

    .venv/bin/python bench/import_ceiling.py [--rows 500000] [--batch 5000] [--without nothing]
    OUTREACH_DATABASE_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/bench .venv/bin/python bench/import_ceiling.py
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from outreach_core.db.engine import create_engine
from outreach_core.db.migrate import migrate
from outreach_core.ids import new_ids

COLUMNS = (
    "id", "workspace_id", "email", "domain", "first_name", "last_name", "sort_name", "company", "custom",
    "search_text", "esp", "verify_status", "verify_api", "status", "import_id", "created_at", "search_index",
)  # fmt: skip
SEARCH_INDEXES = ("ix_leads_search_trgm", "ix_leads_search_short")
KEPT = {"pk_leads", "uq_leads_workspace_id_email"}


def rows(first: int, count: int, rng: random.Random, postgresql: bool) -> list[tuple[Any, ...]]:
    """`count` leads as the merge stores them: two in three at a consumer provider, the rest at one of 5,000
    company domains; `search_index` set on PostgreSQL only (SQLite leaves it to the search-index worker)."""
    now = datetime.now(UTC)
    out = []
    for i, lead_id in zip(range(first, first + count), new_ids("lead", count), strict=True):
        company = f"Acme Company {i % 5000}"
        domain = rng.choice(["gmail.com", "outlook.com"]) if i % 3 else f"acme{i % 5000}.example"
        email = f"person{i}@{domain}"
        text = f"{email} first{i % 100} last{i % 997} {company.lower()}"
        out.append((
            lead_id, "ws_ceiling", email, domain, f"First{i % 100}", f"Last{i % 997}", f"first{i % 100} last{i % 997}",
            company, "{}", text, "gmail", "unknown", False, "active", None,
            now if postgresql else now.strftime("%Y-%m-%d %H:%M:%S.%f"), text if postgresql else None,
        ))  # fmt: skip
    return out


async def prepare(url: str) -> None:
    """The real schema, from nothing: on PostgreSQL the database's `public` schema is dropped first (the
    indexes a `--without` run dropped are not left missing for the next run)."""
    engine = create_engine(url)
    if url.startswith("postgresql"):
        async with engine.begin() as conn:
            await conn.exec_driver_sql("DROP SCHEMA IF EXISTS public CASCADE")
            await conn.exec_driver_sql("CREATE SCHEMA public")
    await migrate(engine)
    await engine.dispose()


async def run_postgresql(url: str, args: argparse.Namespace) -> None:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    await conn.execute("TRUNCATE leads CASCADE")
    await conn.execute(
        "INSERT INTO workspaces (id, name, slug, created_at) VALUES ('ws_ceiling', 'C', 'ceiling', now()) "
        "ON CONFLICT DO NOTHING"
    )
    indexes = [
        r["indexname"] for r in await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'leads'")
    ]
    for name in drop_list(indexes, args.without, postgresql=True):
        await conn.execute(f"DROP INDEX {name}")
    rng = random.Random(1)

    async def batch(first: int) -> None:
        async with conn.transaction():
            await conn.copy_records_to_table(
                "leads", records=rows(first, args.batch, rng, True), columns=list(COLUMNS)
            )

    await measure(args, batch)
    await conn.close()


def run_sqlite(path: str, args: argparse.Namespace) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "cache_size=-65536", "temp_store=MEMORY"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute(
        "INSERT OR IGNORE INTO workspaces (id, name, slug, created_at) "
        "VALUES ('ws_ceiling', 'C', 'ceiling', '2026-01-01 00:00:00.000000')"
    )
    indexes = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'leads'")
    ]
    for name in drop_list(indexes, args.without, postgresql=False):
        conn.execute(f"DROP INDEX {name}")
    if args.without == "secondary":
        conn.execute("DROP TRIGGER lead_counters_insert")
    rng = random.Random(1)
    insert = f"INSERT INTO leads ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"

    async def batch(first: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(insert, rows(first, args.batch, rng, False))
        conn.execute("COMMIT")

    asyncio.run(measure(args, batch))


def drop_list(indexes: list[str], without: str, *, postgresql: bool) -> list[str]:
    if without == "search":
        return [n for n in indexes if n in SEARCH_INDEXES] if postgresql else []
    if without == "secondary":
        return [n for n in indexes if n not in KEPT and not n.startswith("sqlite_autoindex")]
    return []


async def measure(args: argparse.Namespace, batch: Any) -> None:
    started = last = time.perf_counter()
    for first in range(0, args.rows, args.batch):
        await batch(first)
        done = first + args.batch
        if done % 100_000 == 0:
            now = time.perf_counter()
            print(
                f"{done:>9,} leads: {100_000 / (now - last):>7,.0f} rows/s over the last 100,000", flush=True
            )
            last = now
    print(f"all {args.rows:,}: {args.rows / (time.perf_counter() - started):,.0f} rows/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--without", choices=["nothing", "search", "secondary"], default="nothing")
    args = parser.parse_args()
    url = os.environ.get("OUTREACH_DATABASE_URL") or (
        f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='outreach-ceiling-')}/c.db"
    )
    asyncio.run(prepare(url))
    engine = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
    print(f"{engine}: {args.rows:,} leads in transactions of {args.batch:,}, without {args.without}")
    if url.startswith("postgresql"):
        asyncio.run(run_postgresql(url, args))
    else:
        run_sqlite(url.split("///", 1)[1], args)


if __name__ == "__main__":
    main()
