"""The Python pieces of the SQLite import merge for one 5,000-row part, without a database (issue 31).

Rows as `bench/import_e2e.py` makes them, in storage form as the queue holds them; each piece timed on
its own, best of seven, CPU µs a row (`process_time`), with the worker process's collector thresholds:
the rows to dicts (`stored_row`), normalising and deduplicating the addresses, ids and the new leads'
rows (`new_lead_rows`), the known-domain enrichment (`enrich_new_leads`, its domain-cache look-up replaced
by an answer for every consumer domain) and the records `insert_rows` hands to the driver (the driver
call itself replaced by nothing). `--root` runs another checkout's code (e.g. an exported `main`).

    .venv/bin/python bench/import_merge_python.py [--root /tmp/main_export]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sys
import time
import types
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PART = 5_000


def best(work: Callable[[], Any]) -> float:
    """CPU µs a row of `work` over a part, best of seven."""
    spent = []
    for _ in range(7):
        started = time.process_time()
        work()
        spent.append(time.process_time() - started)
    return min(spent) / PART * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    root = parser.parse_args().root
    sys.path[:0] = [root, f"{root}/bench"]
    from import_e2e import row
    from sqlalchemy.dialects import sqlite

    from outreach_app.cli import WORKER_GC_THRESHOLD
    from outreach_core.enrichment import pipeline
    from outreach_core.imports import lead_rows
    from outreach_core.imports.schemas import ROW_KEYS, stored_row
    from outreach_core.kernel import bulk
    from outreach_core.kernel.db.tables import leads
    from outreach_core.kernel.ids import new_ids
    from outreach_core.targets.mail_domains import DomainInfo
    from outreach_core.targets.rules import normalize_email

    gc.set_threshold(*WORKER_GC_THRESHOLD)
    rng = random.Random(1)
    queued = [{ROW_KEYS.get(k, k): v for k, v in row(i, rng).items()} for i in range(PART)]
    ctx = types.SimpleNamespace(
        conn=types.SimpleNamespace(dialect=sqlite.dialect()),
        settings=types.SimpleNamespace(verifier_url=None),
        now=datetime.now(UTC),
        workspace_id="ws_bench",
    )
    imp = types.SimpleNamespace(id="imp_bench", verify=False)

    def parse() -> list[dict[str, Any]]:
        return [stored_row(r) for r in queued]

    rows = parse()

    def normalise() -> dict[str, tuple[str, dict[str, Any]]]:
        unique: dict[str, tuple[str, dict[str, Any]]] = {}
        for r in rows:
            found = normalize_email(r.get("email"))
            if found is not None and found[0] not in unique:
                unique[found[0]] = (found[1], r)
        return unique

    unique = normalise()

    def build() -> list[dict[str, Any]]:
        pairs = list(zip(new_ids("lead", len(unique)), unique, strict=True))
        if hasattr(lead_rows, "new_lead_rows"):
            return lead_rows.new_lead_rows(ctx, imp, ((i, e, *unique[e]) for i, e in pairs))
        return [lead_rows.new_lead_row(ctx, imp, i, e, *unique[e]) for i, e in pairs]  # before this branch

    created = build()

    async def consumer_domains(_ctx: Any, domains: list[str]) -> dict[str, DomainInfo]:
        known = DomainInfo("google", "mx.bench", True, False)
        return {d: known for d in domains if not d.endswith(".example")}

    pipeline.known_domains = consumer_domains  # type: ignore[assignment]
    loop = asyncio.new_event_loop()
    copies: list[list[dict[str, Any]]] = []

    def enrich() -> None:
        loop.run_until_complete(pipeline.enrich_new_leads(ctx, copies.pop()))

    copies += [[dict(r) for r in created] for _ in range(7)]
    enriching = best(enrich)
    enriched = [dict(r) for r in created]
    loop.run_until_complete(pipeline.enrich_new_leads(ctx, enriched))

    async def driver(_sql: str, _records: Any) -> None:
        return None

    ctx.conn.exec_driver_sql = driver

    def records() -> None:
        loop.run_until_complete(bulk.insert_rows(ctx, leads, enriched))

    print(
        f"{root}: CPU µs a row, stored_row {best(parse):.2f}, "
        f"normalise and deduplicate {best(normalise):.2f}, "
        f"ids and new lead rows {best(build):.2f}, enrich_new_leads {enriching:.2f}, "
        f"insert_rows' records {best(records):.2f}"
    )


if __name__ == "__main__":
    main()
