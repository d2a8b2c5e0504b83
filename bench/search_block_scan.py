"""The measurement behind a design we did not adopt: sort-order blocks of concatenated search texts.

A search whose matches all come last in the sort order (docs/leads.md, "A search many leads hold") walks
nearly the whole sort index before its first match. The walk costs about half a microsecond per index entry,
mostly per-entry overhead. Concatenating the texts of each run of consecutive leads in one sort order into a
block, and scanning the blocks in order for the term, pays that overhead once per block. This script
measures that scan alone, the part of the design that decides whether it can meet 150 ms at a million leads:
a million texts of about 70 bytes, in order, with the term only in the last 7 % of them (one in 15 there).

It builds the blocks in a scratch SQLite file and, with --postgres URL, in a scratch table there, and prints
how long finding the first block that holds the term takes (median of 5), for several block sizes and ways
of testing. Nothing of it is part of the service.

    .venv/bin/python bench/search_block_scan.py [--postgres postgresql://postgres@127.0.0.1:5432/bench]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import string
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

LEADS = 1_000_000
TERM = "ol#i"
"""Holds a character no generated text has, so its first match is exactly where it was planted."""
SEP = "\x1f"


def texts() -> list[str]:
    """A million search texts (address, names, company) in address order; `TERM` in the last 7 %."""
    rnd = random.Random(1)

    def words(n: int, lo: int, hi: int) -> list[str]:
        return ["".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(lo, hi))) for _ in range(n)]

    first, last, company = words(3_000, 3, 8), words(5_000, 4, 10), words(20_000, 4, 12)
    rows = []
    for i in range(LEADS):
        f, la, c = rnd.choice(first), rnd.choice(last), rnd.choice(company)
        rows.append(f"{f}.{la}{i}@{c}.com {f} {la} {c}")
    rows.sort()
    for i in range(int(LEADS * 0.93), LEADS, 15):
        rows[i] += " " + TERM
    return rows


def blocks(rows: list[str], size: int) -> Iterable[tuple[int, str]]:
    """(block number, the block's texts joined) for runs of `size` consecutive texts."""
    return ((k, SEP.join(rows[k * size : (k + 1) * size])) for k in range(-(-len(rows) // size)))


def median_ms(run: Callable[[], object]) -> tuple[float, object]:
    """The median of 5 timings of `run`, in ms, and what it returned."""
    times, result = [], None
    for _ in range(5):
        started = time.perf_counter()
        result = run()
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)[2], result


def on_sqlite(rows: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="outreach-bench-") as scratch:
        db = sqlite3.connect(Path(scratch) / "blocks.db")
        db.create_function("holds", 2, lambda h, n: h.find(n) >= 0, deterministic=True)
        for size in (300, 1_000, 3_000):
            for kind in ("text", "blob"):
                db.execute("DROP TABLE IF EXISTS blocks")
                db.execute(f"CREATE TABLE blocks (id INTEGER PRIMARY KEY, texts {kind})")
                made = blocks(rows, size)
                db.executemany(
                    "INSERT INTO blocks VALUES (?, ?)",
                    made if kind == "text" else ((k, t.encode()) for k, t in made),
                )
                db.commit()
                term: str | bytes = TERM if kind == "text" else TERM.encode()
                for test in ("instr(texts, ?) > 0", "holds(texts, ?)"):
                    sql = f"SELECT id FROM blocks WHERE {test} ORDER BY id LIMIT 1"
                    ms, found = median_ms(lambda sql=sql, term=term: db.execute(sql, (term,)).fetchone()[0])
                    label = "instr" if test.startswith("instr") else "Python find (function)"
                    print(f"| SQLite | {size:,} | {kind} | {label} | {found} | {ms:.1f} |")
        db.close()


async def on_postgres(url: str, rows: list[str]) -> None:
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(url)
    try:
        # 25 texts stay under the 2 kB a row may hold before TOAST; larger blocks are stored out of line
        for size, storage in ((25, "main"), (1_000, "external"), (1_000, "extended")):
            await conn.execute("DROP TABLE IF EXISTS bench_search_blocks")
            await conn.execute("CREATE TABLE bench_search_blocks (id int PRIMARY KEY, texts text)")
            await conn.execute(f"ALTER TABLE bench_search_blocks ALTER COLUMN texts SET STORAGE {storage}")
            await conn.copy_records_to_table("bench_search_blocks", records=list(blocks(rows, size)))
            await conn.execute("VACUUM ANALYZE bench_search_blocks")
            sql = "SELECT id FROM bench_search_blocks WHERE strpos(texts, $1) > 0 ORDER BY id LIMIT 1"
            timings = []
            for _ in range(5):
                started = time.perf_counter()
                found = await conn.fetchval(sql, TERM)
                timings.append((time.perf_counter() - started) * 1000)
            ms = sorted(timings)[2]
            print(f"| PostgreSQL | {size:,} | text, {storage} | strpos | {found} | {ms:.1f} |")
        await conn.execute("DROP TABLE bench_search_blocks")
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", help="a scratch PostgreSQL database (asyncpg URL)")
    args = parser.parse_args()
    rows = texts()
    print("| engine | texts per block | stored as | test | first block holding the term | median ms |")
    print("|---|---:|---|---|---:|---:|")
    on_sqlite(rows)
    if args.postgres:
        asyncio.run(on_postgres(args.postgres, rows))


if __name__ == "__main__":
    main()
