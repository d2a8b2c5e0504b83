"""What noting the unknown mail domains costs the import merge (issue 31, migration 0040).

The merge notes the distinct domains of each part's leads that have no `domain_cache` entry in
`domain_lookups_wanted` (`enrichment.pipeline._note_unknown_domains`: one `INSERT ... SELECT ... ON CONFLICT
DO NOTHING` per part, inside the merge's transaction), for the `enrich` worker in the other process. This
runs that statement as the merge does, part after part, against OUTREACH_DATABASE_URL (default a fresh
SQLite file), with nobody taking the domains (the worst case: the table only grows, up to the parts'
10,000 company domains), and reports per part and per row of a part: wall time and this process's CPU
(on SQLite that includes the database; on PostgreSQL add the backend's, reported from pg_stat_statements
when available, otherwise the wall time bounds it).

    .venv/bin/python bench/noted_domains.py [--parts 40] [--rows 5000] [--distinct 1540]

`--distinct`: unknown company domains per part (a 5,000-row part of `bench/import_e2e.py` holds about
1,667 company rows at 10,000 domains: about 1,540 distinct).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time

from outreach_core.enrichment.pipeline import _note_unknown_domains
from outreach_core.kernel.context import SystemContext
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings


async def main(parts: int, rows: int, distinct: int) -> None:
    url = os.environ.get(
        "OUTREACH_DATABASE_URL", f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='outreach-noted-')}/b.db"
    )
    runtime = Runtime(Settings(database_url=url, secret_key="bench"))
    await migrate(runtime.engine)
    rng = random.Random(1)
    companies = [f"company{n}.example" for n in range(10_000)]
    walls, cpus = [], []
    try:
        for _ in range(parts):
            # a part's company rows: `distinct` domains, as the merge hands them (one per lead, repeated)
            chosen = rng.sample(companies, distinct)
            domains = [rng.choice(chosen) for _ in range(rows // 3)] + chosen

            async def note(ctx: SystemContext, given: list[str] = domains) -> None:
                wall, cpu = time.perf_counter(), time.process_time()  # the statement, not the transaction
                await _note_unknown_domains(ctx, given)
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)

            await runtime.system(note)
    finally:
        await runtime.dispose()
    engine = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
    for label, values in (("wall", walls), ("CPU (this process)", cpus)):
        median = statistics.median(values)
        print(
            f"{engine}, {parts} parts of {rows:,} rows, {distinct:,} unknown domains each: {label} per part "
            f"median {median * 1e3:.2f} ms (first {values[0] * 1e3:.2f}, last {values[-1] * 1e3:.2f}) = "
            f"{median / rows * 1e6:.2f} µs a row of the part; load {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", type=int, default=40)
    parser.add_argument("--rows", type=int, default=5_000)
    parser.add_argument("--distinct", type=int, default=1_540)
    args = parser.parse_args()
    asyncio.run(main(args.parts, args.rows, args.distinct))
