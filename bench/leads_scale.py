"""Leads at a million: import throughput, list_leads and stats latency, against a real `outreach serve`.

Starts `outreach serve --no-workers` on a free port (database from OUTREACH_DATABASE_URL, default a fresh
SQLite file), creates a workspace on the agency plan, imports N leads through `POST /leads/import` in
5,000-row chunks (the requests accept and queue the rows), has the import worker merge them (afterwards in
this process, or with `--merge-during` in a real `outreach worker --only import` process running during the
import), then measures `GET /leads` for page 1 of every single filter and sort, with `search`, the
deepest allowed page, and `GET /leads/stats`. Prints Markdown for docs/PERFORMANCE.md.

    .venv/bin/python bench/leads_scale.py [--leads 1000000] [--samples 30] [--merge-during]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from _server import served

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 5_000
FIRST = [
    "ann",
    "bob",
    "cid",
    "dee",
    "eve",
    "fay",
    "gus",
    "hal",
    "ivy",
    "jon",
    "kim",
    "lou",
    "max",
    "ned",
    "oli",
]
LAST = [
    "lee",
    "kim",
    "ng",
    "roe",
    "fox",
    "day",
    "gray",
    "hill",
    "lane",
    "moss",
    "park",
    "reed",
    "shaw",
    "west",
]
WORDS = ["acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wayne", "wonka", "tyrell"]
DOMAINS = ["gmail.com", "outlook.com", "yahoo.com", "proton.me", "icloud.com", "zoho.com"]


def row(i: int, rng: random.Random) -> dict[str, Any]:
    company = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i % 997}"
    domain = rng.choice(DOMAINS) if i % 3 else f"{company.replace(' ', '')}.example"
    return {
        "email": f"{rng.choice(FIRST)}.{rng.choice(LAST)}{i}@{domain}",
        "firstName": rng.choice(FIRST).title(),
        "lastName": rng.choice(LAST).title(),
        "company": company.title(),
        "title": rng.choice(["CEO", "CTO", "Head of Sales", "Founder", None]),
    }


def percentile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100)[q - 1] if len(samples) > 1 else samples[0]


def timed(http: httpx.Client, path: str, params: dict[str, Any], samples: int) -> tuple[float, float, str]:
    latencies = []
    total = ""
    http.get(path, params=params).raise_for_status()  # warm-up, not timed: the first read after a bulk write
    for _ in range(samples):
        start = time.perf_counter()
        response = http.get(path, params=params)
        latencies.append((time.perf_counter() - start) * 1000)
        response.raise_for_status()
        body = response.json()
        total = f"{body.get('total', 0):,}" if body.get("totalExact", True) else f"> {body['total']:,}"
    return percentile(latencies, 50), percentile(latencies, 95), total


async def _refresh_statistics(url: str) -> None:
    from outreach_core.kernel.db.engine import create_engine
    from outreach_core.kernel.db.maintenance import refresh_lead_statistics

    engine = create_engine(url)
    if engine.dialect.name == "postgresql":  # autovacuum's job after the indexing pass rewrote every row
        async with engine.connect() as conn:
            await (await conn.execution_options(isolation_level="AUTOCOMMIT")).exec_driver_sql("VACUUM leads")
    async with engine.begin() as conn:
        await refresh_lead_statistics(conn)
    await engine.dispose()


async def _drain(url: str, worker: str) -> tuple[int, float]:
    """Run a worker's ticks (`workers.<worker>.tick`) until it has nothing left: what it does after an
    import (the import worker merges every queued row, the search-index worker indexes every pending lead).
    Returns the items handled and the seconds it took."""
    from importlib import import_module

    from outreach_core.kernel.runtime import Runtime
    from outreach_core.kernel.settings import Settings

    tick = import_module(f"workers.{worker}").tick
    runtime = Runtime(Settings(database_url=url, secret_key="bench-secret"))
    started, total = time.perf_counter(), 0
    while done := await tick(runtime):
        total += done
    await runtime.dispose()
    return total, time.perf_counter() - started


def _import_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "outreach_app.cli", "worker", "--only", "import"],
        env={**os.environ, **env},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--leads", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument(
        "--merge-during",
        action="store_true",
        help="run `outreach worker --only import` during the import (as `outreach serve` would)",
    )
    parser.add_argument("--import-only", action="store_true", help="stop once every row is merged")
    args = parser.parse_args()
    with (
        served(plan="agency") as server,
        httpx.Client(
            base_url=server.base, headers={"Authorization": f"Bearer {server.key}"}, timeout=600
        ) as http,
    ):
        engine, env = server.engine, server.env
        rng = random.Random(7)
        lst = http.post("/api/v1/lists", json={"name": "Bench"})
        list_id = lst.json()["id"] if lst.status_code == 200 else None
        import_id = None
        worker = _import_worker(env) if args.merge_during else None
        started = time.perf_counter()
        chunk_times = []
        for first in range(0, args.leads, CHUNK):
            rows = [row(i, rng) for i in range(first, min(first + CHUNK, args.leads))]
            body: dict[str, Any] = {"rows": rows, "final": first + CHUNK >= args.leads}
            if import_id:
                body["importId"] = import_id
            elif list_id and args.leads <= 2 * CHUNK:
                body["list"] = {"id": list_id}
            t0 = time.perf_counter()
            response = http.post("/api/v1/leads/import", json=body)
            chunk_times.append(time.perf_counter() - t0)
            response.raise_for_status()
            import_id = response.json()["id"]
        elapsed = time.perf_counter() - started
        result = http.get(f"/api/v1/leads/imports/{import_id}").json()
        rate = args.leads / elapsed
        p50_ms, p95_ms = percentile(chunk_times, 50) * 1000, percentile(chunk_times, 95) * 1000
        print(
            f"\n{engine}: {args.leads:,} rows accepted in {elapsed:.1f} s = {rate:,.0f} rows/s "
            f"(chunk p50 {p50_ms:.0f} ms, p95 {p95_ms:.0f} ms; {result['queued']:,} still queued)"
        )
        if worker is not None:  # the worker process merges the rest of the queue
            while (result := http.get(f"/api/v1/leads/imports/{import_id}").json())["queued"]:
                time.sleep(0.2)
            worker.terminate()
            worker.wait()
        else:
            merged, seconds = asyncio.run(_drain(env["OUTREACH_DATABASE_URL"], "imports"))
            print(
                f"import worker afterwards: {merged:,} rows merged in {seconds:.1f} s "
                f"= {merged / seconds:,.0f} rows/s"
            )
            result = http.get(f"/api/v1/leads/imports/{import_id}").json()
        done = time.perf_counter() - started
        print(
            f"every row merged {done:.1f} s after the first chunk "
            f"= {args.leads / done:,.0f} rows/s end to end; "
            f"created {result['created']:,}, status {result['status']}\n"
        )

        if args.import_only:
            return
        # Search right after the import, before the search-index worker has run: every lead is pending
        # and matched with LIKE.
        for name, params in (("few match", {"search": "ann.lee12345"}), ("many match", {"search": "hooli"})):
            p50, p95, total = timed(http, "/api/v1/leads", params, max(3, args.samples // 5))
            print(f"before indexing, search {name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms, total {total}")

        # The workers' part (the benchmark runs the server without workers, so that no DNS is needed): the
        # search-index worker indexes the new leads, and the enrich worker refreshes planner statistics
        # when the import finishes.
        indexed, seconds = asyncio.run(_drain(env["OUTREACH_DATABASE_URL"], "search_index"))
        print(
            f"search index: {indexed:,} leads indexed in {seconds:.1f} s = {indexed / seconds:,.0f} leads/s"
        )
        asyncio.run(_refresh_statistics(env["OUTREACH_DATABASE_URL"]))

        deepest = max(1, min(100_000, -(-args.leads // 10)))
        cases: list[tuple[str, dict[str, Any]]] = [("page 1, default sort (createdAt desc)", {})]
        for sort in ("createdAt", "email", "name", "company"):
            for direction in ("asc", "desc"):
                cases.append((f"sort={sort} dir={direction}", {"sort": sort, "dir": direction}))
        cases += [
            ("status=active", {"status": "active"}),
            ("status=won (none match)", {"status": "won"}),
            ("verify=unknown", {"verify": "unknown"}),
            ("esp=unknown", {"esp": "unknown"}),
            ("labelId=none", {"labelId": "none"}),
            ("search=hooli (many match)", {"search": "hooli"}),
            ("search=hooli sort=company (matches sort last)", {"search": "hooli", "sort": "company"}),
            ("search=hooli sort=company dir=asc", {"search": "hooli", "sort": "company", "dir": "asc"}),
            ("search=hooli sort=name", {"search": "hooli", "sort": "name"}),
            ("search=hooli sort=email dir=asc", {"search": "hooli", "sort": "email", "dir": "asc"}),
            (
                "search=oli. sort=email dir=asc (every match past 93% of the order)",
                {"search": "oli.", "sort": "email", "dir": "asc"},
            ),
            ("search=kim.lee1 (hundreds match)", {"search": "kim.lee1"}),
            ("search=ann.lee12345 (few match)", {"search": "ann.lee12345"}),
            ("search=zz (2 chars, none)", {"search": "zz"}),
            ("search=eh (2 chars, thousands)", {"search": "eh"}),
            ("search=q (1 char, none)", {"search": "q"}),
            ("search=ki (2 chars, many)", {"search": "ki"}),
            ("search=k (1 char, many)", {"search": "k"}),
            (f"deepest page ({deepest:,} x 10)", {"page": deepest, "pageSize": 10}),
            ("deepest page, sort=company", {"page": deepest, "pageSize": 10, "sort": "company"}),
            ("deepest page, sort=email", {"page": deepest, "pageSize": 10, "sort": "email"}),
        ]
        if list_id:
            cases.append(("listId", {"listId": list_id}))
        print("| GET /leads | p50 ms | p95 ms | total |")
        print("|---|---:|---:|---:|")
        for name, params in cases:
            p50, p95, total = timed(http, "/api/v1/leads", params, args.samples)
            print(f"| {name} | {p50:.1f} | {p95:.1f} | {total} |")
        p50, p95, total = timed(http, "/api/v1/leads/stats", {}, args.samples)
        print(f"| GET /leads/stats | {p50:.1f} | {p95:.1f} | {total} |")


if __name__ == "__main__":
    main()
