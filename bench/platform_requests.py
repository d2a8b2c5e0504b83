"""Request overhead of the platform: authenticated REST and MCP calls against a real `outreach serve`.

Starts `outreach serve --no-workers` on a free port against the database in OUTREACH_DATABASE_URL (default:
a fresh SQLite file), creates a workspace, then drives it with a concurrent httpx client from this process
and prints a Markdown table of latency percentiles and throughput (copy it into docs/PERFORMANCE.md).

    .venv/bin/python bench/platform_requests.py [--requests 2000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import httpx2
from _server import served
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]


async def measure(
    name: str, call: Callable[[], Awaitable[None]], total: int, concurrency: int
) -> dict[str, float | str]:
    latencies: list[float] = []
    queue = iter(range(total))

    async def worker() -> None:
        for _ in queue:
            start = time.perf_counter()
            await call()
            latencies.append((time.perf_counter() - start) * 1000)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - began
    q = statistics.quantiles(latencies, n=100)
    return {"name": name, "rps": total / elapsed, "p50": q[49], "p95": q[94], "p99": q[98]}


async def run(base: str, key: str, total: int, concurrency: int) -> list[dict[str, float | str]]:
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=30) as http:

        async def ping() -> None:
            (await http.get("/api/v1/ping")).raise_for_status()

        async def me() -> None:
            (await http.get("/api/v1/me")).raise_for_status()

        async def keys() -> None:
            (await http.get("/api/v1/api-keys")).raise_for_status()

        async def patch_settings() -> None:
            (await http.patch("/api/v1/settings/sending", json={"aiLabels": True})).raise_for_status()

        async with contextlib.AsyncExitStack() as stack:
            mcp_http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=30))
            client = await stack.enter_async_context(
                Client(streamable_http_client(f"{base}/mcp", http_client=mcp_http))
            )

            async def mcp_get_me() -> None:
                result = await client.call_tool("get_me", {})
                assert not result.is_error

            mcp_row = await measure(
                "MCP tools/call get_me (streamable HTTP, one session)", mcp_get_me, total, concurrency
            )

        for fn in (ping, me):  # warm up
            for _ in range(50):
                await fn()
        return [
            await measure("GET /api/v1/ping (no auth)", ping, total, concurrency),
            await measure("GET /api/v1/me (auth + 2 reads)", me, total, concurrency),
            await measure("GET /api/v1/api-keys (auth + join)", keys, total, concurrency),
            await measure(
                "PATCH /api/v1/settings/sending (auth + write)", patch_settings, total, concurrency
            ),
            mcp_row,
        ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with served(plan="growth") as server:
        rows = asyncio.run(run(server.base, server.key, args.requests, args.concurrency))
    print(
        f"\n{server.engine}, {args.requests} requests per row, concurrency {args.concurrency}, one server\n"
    )
    print("| request | req/s | p50 ms | p95 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['name']} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} |")


if __name__ == "__main__":
    main()
