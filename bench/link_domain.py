"""The link domain's costs on the paths that run often: the host gate in front of every request, the reverse
proxy's `/tls/ask`, and one pass of the `link-domains` worker over many due link domains.

Against the database in OUTREACH_DATABASE_URL (default: a fresh SQLite file; the PostgreSQL database is
dropped and re-created, so point it at a scratch one), with N workspaces each holding an active link domain,
and a dnslib DNS server on loopback answering every CNAME. Prints a Markdown table (copy it into
docs/PERFORMANCE.md): requests per second, p95 latency and CPU microseconds per request or per row.

    .venv/bin/python bench/link_domain.py [--workspaces 1000] [--requests 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sqlalchemy import text, update

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from http_api.link_host_gate import LinkHostGate  # noqa: E402
from http_api.tls_ask import tls_ask_routes  # noqa: E402
from outreach_app.adapters import DnspythonResolver  # noqa: E402
from outreach_core.kernel.context import SystemContext, system_scope  # noqa: E402
from outreach_core.kernel.db.migrate import migrate  # noqa: E402
from outreach_core.kernel.db.tables import link_domains, workspaces  # noqa: E402
from outreach_core.kernel.ids import new_id  # noqa: E402
from outreach_core.kernel.ports import Ports  # noqa: E402
from outreach_core.kernel.runtime import Runtime  # noqa: E402
from outreach_core.kernel.settings import Settings  # noqa: E402
from outreach_core.link_domain.pipeline import recheck_link_domains  # noqa: E402
from tests.dns_server import DnsServer  # noqa: E402
from tests.mail_servers import free_port  # noqa: E402

TARGET = "edge.bench-links.test"


async def _insert_workspaces(ctx: SystemContext, count: int) -> list[str]:
    """`count` bare workspaces (the columns every row needs), each with an active link domain."""
    ids = [new_id("ws") for _ in range(count)]
    await ctx.conn.execute(
        system_scope(workspaces).table.insert(),
        [
            {"id": i, "name": f"Bench {n}", "slug": f"bench-{n}", "created_at": ctx.now}
            for n, i in enumerate(ids)
        ],
    )
    await ctx.conn.execute(
        system_scope(link_domains).table.insert(),
        [
            {
                "workspace_id": i,
                "hostname": f"links.bench{n}.example.com",
                "status": "active",
                "dns": "ok",
                "tls": "active",
                "since": ctx.now,
                "next_check_at": ctx.now,
                "created_at": ctx.now,
                "verified_at": ctx.now,
                "checked_at": ctx.now,
            }
            for n, i in enumerate(ids)
        ],
    )
    return ids


async def _timed(total: int, concurrency: int, call: Callable[[], Awaitable[Any]]) -> dict[str, float]:
    latencies: list[float] = []
    queue = iter(range(total))

    async def worker() -> None:
        for _ in queue:
            start = time.perf_counter()
            await call()
            latencies.append((time.perf_counter() - start) * 1000)

    cpu, began = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    q = statistics.quantiles(latencies, n=100)
    return {"rps": total / elapsed, "p95": q[94], "cpu_us": cpu / total * 1e6}


def _asgi_get(app: Any, host: str, path: str, query: bytes = b"") -> Callable[[], Awaitable[int]]:
    async def call() -> int:
        status = 0

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query,
            "headers": [(b"host", host.encode())],
            "scheme": "http",
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 5555),
            "root_path": "",
            "http_version": "1.1",
        }
        await app(scope, receive, send)
        return status

    return call


async def main(workspaces: int, requests: int) -> None:
    url = os.environ.get("OUTREACH_DATABASE_URL") or (
        f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='bench-link-')}/outreach.db"
    )
    dns = DnsServer(free_port())
    dns.start()
    dns.add(TARGET, "A", "127.0.0.1")
    for n in range(workspaces):
        dns.add(f"links.bench{n}.example.com", "CNAME", f"{TARGET}.")
    settings = Settings(
        database_url=url,
        secret_key="bench",
        link_target=TARGET,
        dns_nameservers=dns.nameservers,
        link_host_cache_s=5.0,
    )
    runtime = Runtime(settings, ports=Ports(dns=DnspythonResolver(dns.nameservers, timeout_s=2.0)))
    if not runtime.is_sqlite:
        async with runtime.engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    await migrate(runtime.engine)
    await runtime.system(_insert_workspaces, workspaces)

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    gate = LinkHostGate(inner, runtime)
    from starlette.applications import Starlette

    ask = Starlette(routes=tls_ask_routes(runtime))
    rows: list[tuple[str, dict[str, float]]] = []
    link = "links.bench7.example.com"
    for name, call in (
        ("gate: the API's own host", _asgi_get(gate, "127.0.0.1:8000", "/api/v1/ping")),
        ("gate: a link domain, /api (404)", _asgi_get(gate, link, "/api/v1/ping")),
        ("gate: a link domain, /l/ (passed)", _asgi_get(gate, link, "/l/token")),
        ("gate: another host name", _asgi_get(gate, "www.elsewhere.example", "/api/v1/ping")),
        ("/tls/ask (a link domain)", _asgi_get(ask, "127.0.0.1", "/tls/ask", f"domain={link}".encode())),
    ):
        await call()  # warm: the gate's first read of the list
        rows.append((name, await _timed(requests, 16, call)))

    async with runtime.engine.begin() as conn:
        await conn.execute(update(link_domains).values(next_check_at=settings_now()))
    cpu, began = time.process_time(), time.perf_counter()
    checked = 0
    while True:
        done = await recheck_link_domains(runtime)
        if not done:
            break
        checked += done
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    rows.append(
        (
            f"worker: {checked} due link domains (DNS only)",
            {"rps": checked / elapsed, "p95": float("nan"), "cpu_us": cpu / max(checked, 1) * 1e6},
        )
    )
    engine = "PostgreSQL" if not runtime.is_sqlite else "SQLite"
    print(f"\n{engine}, {workspaces} link domains, {requests} requests each, 16 at a time\n")
    print("| what | per second | p95 ms | CPU µs each |")
    print("|---|--:|--:|--:|")
    for name, r in rows:
        p95 = "-" if r["p95"] != r["p95"] else f"{r['p95']:.2f}"
        print(f"| {name} | {r['rps']:,.0f} | {p95} | {r['cpu_us']:.0f} |")
    await runtime.dispose()
    dns.stop()


def settings_now() -> Any:
    import datetime as dt

    return dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspaces", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=5000)
    args = parser.parse_args()
    asyncio.run(main(args.workspaces, args.requests))
