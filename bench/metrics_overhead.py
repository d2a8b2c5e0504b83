"""What `/metrics` costs a request (self-hosting kit, issue 30; target: at most 50 µs per request).

The real app (`build_app`, on a fresh SQLite database) is called in-process through ASGI, with and without
its request-metrics middleware, on three routes: `GET /healthz` (no database), `GET /api/v1/ping` (mounted
REST app, no auth) and `GET /api/v1/leads/{id}` without a key (route template with a path parameter, 401).
Also the middleware's stages alone: the route template lookup and `Metrics.observe`. Prints wall and CPU
microseconds per request and the rate (copy the table into docs/PERFORMANCE.md), and one scrape's size
and time.

    .venv/bin/python bench/metrics_overhead.py [--requests 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from outreach_app.asgi import build_app
from outreach_app.bootstrap import build_runtime
from outreach_app.ops.metrics import Metrics, RequestMetrics, route_template
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.settings import Settings


def scope_for(path: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def call(app: Any, path: str, scope: dict[str, Any] | None = None) -> int:
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope if scope is not None else scope_for(path), receive, send)
    return status


async def timed(n: int, one: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(wall µs, CPU µs) per call over `n` calls, after a warm-up."""
    for _ in range(min(n // 10, 500)):
        await one()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        await one()
    return (time.perf_counter() - wall) / n * 1e6, (time.process_time() - cpu) / n * 1e6


def without_metrics(app: Any) -> Any:
    app.user_middleware = [m for m in app.user_middleware if m.cls is not RequestMetrics]
    app.middleware_stack = None
    return app


async def main(requests: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="outreach-bench-metrics-"))
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{folder / 'bench.db'}",
        secret_key="bench",
        log_level="WARNING",
        log_json=True,
        rate_limit_per_minute=10**9,
        rate_limit_burst=10**9,
    )
    from http_api.request_log import configure_logging

    configure_logging("WARNING", True)
    runtime = build_runtime(settings)
    await migrate(runtime.engine)
    with_app = build_app(runtime, flush_usage=False)
    bare_app = without_metrics(build_app(runtime, flush_usage=False))
    rows = []
    for label, path in [
        ("GET /healthz", "/healthz"),
        ("GET /api/v1/ping", "/api/v1/ping"),
        ("GET /api/v1/leads/{id} (401)", "/api/v1/leads/ld_123"),
    ]:
        # alternate the two apps in rounds so machine noise hits both alike
        sums = {"with": [0.0, 0.0], "without": [0.0, 0.0]}
        rounds = 5
        for _ in range(rounds):
            for name, app in (("with", with_app), ("without", bare_app)):
                wall, cpu = await timed(requests // rounds, lambda app=app, path=path: call(app, path))
                sums[name][0] += wall / rounds
                sums[name][1] += cpu / rounds
        (w_wall, w_cpu), (b_wall, b_cpu) = sums["with"], sums["without"]
        rows.append((label, b_wall, w_wall, w_wall - b_wall, w_cpu - b_cpu, 1e6 / w_wall))

    metrics = Metrics()
    template_scope = scope_for("/api/v1/leads/ld_1")
    await call(with_app, "", template_scope)  # the scope as the routers leave it
    assert route_template(template_scope, "") == "/api/v1/leads/{id}"
    n = requests * 5
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        route_template(template_scope, "")
    template_us = ((time.perf_counter() - start) / n * 1e6, (time.process_time() - cpu) / n * 1e6)
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        metrics.observe("GET", "/api/v1/leads/{id}", 200 + (i & 1), 0.001)
    observe_us = ((time.perf_counter() - start) / n * 1e6, (time.process_time() - cpu) / n * 1e6)

    # the middleware alone, around an app that answers at once (as a routed request leaves the scope)
    route = template_scope["route"]

    async def instant(scope: Any, receive: Any, send: Any) -> None:
        scope["route"] = route
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    wrapped = RequestMetrics(instant, metrics)
    bare_wall, bare_cpu = await timed(n, lambda: call(instant, "/api/v1/leads/ld_1"))
    wrap_wall, wrap_cpu = await timed(n, lambda: call(wrapped, "/api/v1/leads/ld_1"))
    alone = (wrap_wall - bare_wall, wrap_cpu - bare_cpu)

    start = time.perf_counter()
    scrape = await call(with_app, "/metrics")
    scrape_ms = (time.perf_counter() - start) * 1000
    await runtime.dispose()

    print(f"{requests:,} requests per route, in-process ASGI, SQLite\n")
    print(
        "| request | without metrics µs (wall) | with metrics µs (wall) | added µs (wall) | added µs (CPU) "
        "| rate with |"
    )
    print("|---|---|---|---|---|---|")
    for label, bare, with_, added, added_cpu, rate in rows:
        print(f"| {label} | {bare:.1f} | {with_:.1f} | {added:+.1f} | {added_cpu:+.1f} | {rate:,.0f}/s |")
    print()
    print("| stage | wall µs | CPU µs |")
    print("|---|---|---|")
    print(f"| route template | {template_us[0]:.2f} | {template_us[1]:.2f} |")
    print(f"| Metrics.observe (counter + histogram) | {observe_us[0]:.2f} | {observe_us[1]:.2f} |")
    print(f"| the whole middleware (around an instant app) | {alone[0]:.2f} | {alone[1]:.2f} |")
    print(f"\nGET /metrics: status {scrape}, {scrape_ms:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20000)
    asyncio.run(main(parser.parse_args().requests))
