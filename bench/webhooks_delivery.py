"""Webhook delivery: throughput and commit-to-arrival latency of one `outreach worker --only webhooks`.

Runs, against a fresh database (OUTREACH_DATABASE_URL or `--database-url`, default a new SQLite file; a
PostgreSQL database is emptied first):

- a receiver in its own process (uvicorn on loopback) that answers 200 at once on `/fast` and after
  `--slow-s` seconds on `/slow`, and remembers when each event id first arrived (time.time());
- the worker as users run it, `python -m outreach_app.cli worker --only webhooks`, in its own process;
- this process as the producer: `lead.won` events recorded through `outbox.record_event` in transactions,
  each event's commit time taken right after its transaction commits.

Phases (one endpoint, `/fast`, subscribed to lead.won):

1. backlog: `--backlog` events committed as fast as possible; throughput = events / (last arrival - first
   commit);
2. steady: `--rate` events/s for `--seconds` s (a transaction every 100 ms); latency = first arrival -
   commit, p50/p99/max, and the throughput over the phase;
3. slow neighbour: a second endpoint `/slow` (answers after `--slow-s` s) subscribed too; the same steady
   load; the fast endpoint's figures again;
4. the backlog again with the slow neighbour, and how many POSTs the slow one got in phases 3 and 4.

    .venv/bin/python bench/webhooks_delivery.py [--backlog 10000] [--rate 500] [--seconds 20]
    .venv/bin/python bench/webhooks_delivery.py --database-url postgresql+asyncpg://postgres@127.0.0.1/bench
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from sqlalchemy import text  # noqa: E402

from outreach_core.events.data import iso_z  # noqa: E402
from outreach_core.kernel.context import WorkspaceContext, scoped  # noqa: E402
from outreach_core.kernel.db.migrate import migrate  # noqa: E402
from outreach_core.kernel.db.tables import outbox  # noqa: E402
from outreach_core.kernel.ids import new_id  # noqa: E402
from outreach_core.kernel.runtime import Runtime  # noqa: E402
from outreach_core.kernel.settings import Settings  # noqa: E402
from outreach_core.webhooks.operations import create_webhook  # noqa: E402
from outreach_core.webhooks.schemas import CreateWebhookIn  # noqa: E402
from outreach_core.workspace.operations import init_workspace  # noqa: E402

SECRET = "bench-secret-key-not-for-production"


# --- the receiver (its own process) ----------------------------------------------------------------------


def receiver_app(slow_s: float) -> Any:
    arrivals: dict[str, dict[str, float]] = {"/fast": {}, "/slow": {}}
    posts: dict[str, int] = {"/fast": 0, "/slow": 0}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        path = scope["path"]
        if path == "/stats":
            body = json.dumps({"arrivals": arrivals, "posts": posts}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": body})
            return
        now = time.time()
        event = dict(scope["headers"]).get(b"service-event-id", b"").decode()
        posts[path] = posts.get(path, 0) + 1
        arrivals.setdefault(path, {}).setdefault(event, now)
        if path == "/slow":
            await asyncio.sleep(slow_s)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


def run_receiver(port: int, slow_s: float) -> None:
    import uvicorn

    uvicorn.run(receiver_app(slow_s), host="127.0.0.1", port=port, log_level="warning", access_log=False)


# --- the producer and the measurements -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def stats(client: httpx.AsyncClient) -> dict[str, Any]:
    return (await client.get("/stats")).json()  # type: ignore[no-any-return]


async def produce(rt: Runtime, principal: Any, count: int) -> list[tuple[str, float]]:
    """Record `count` lead.won events in one transaction, as `outbox.record_event` writes them but in one
    executemany (the load generator must not hold the write lock for long); (event id, commit time) each."""

    async def record(ctx: WorkspaceContext) -> list[str]:
        rows = []
        for i in range(count):
            data = {
                "lead": {
                    "id": f"lead_bench{i:021d}",
                    "email": f"lead{i}@bench.example",
                    "firstName": "Ada",
                    "lastName": "Lovelace",
                    "company": "Analytical Engines",
                    "status": "won",
                },
                "campaign": {"id": "cmp_bench", "name": "Bench"},
                "thread": None,
                "step": None,
                "variant": None,
                "value": 1200,
            }
            event_id = new_id("evt")
            payload = {
                "id": event_id,
                "type": "lead.won",
                "createdAt": iso_z(ctx.now),
                "workspaceId": ctx.workspace_id,
                "test": False,
                "data": data,
            }
            rows.append({"id": event_id, "kind": "lead.won", "payload": payload, "created_at": ctx.now})
        await ctx.conn.execute(*scoped(ctx, outbox).insert_many(rows))
        return [r["id"] for r in rows]

    ids = await rt.execute(principal, record)
    committed = time.time()
    return [(i, committed) for i in ids]


async def wait_all(
    client: httpx.AsyncClient, path: str, ids: list[str], timeout_s: float
) -> dict[str, float]:
    deadline = time.monotonic() + timeout_s
    wanted = set(ids)
    while True:
        got = (await stats(client))["arrivals"][path]
        if wanted <= got.keys():
            return {i: got[i] for i in ids}
        if time.monotonic() > deadline:
            missing = len(wanted - got.keys())
            raise SystemExit(f"{missing} of {len(ids)} events never arrived at {path}")
        await asyncio.sleep(0.25)


async def steady(rt: Runtime, principal: Any, rate: int, seconds: float) -> list[tuple[str, float]]:
    per_tick = max(1, rate // 10)
    produced: list[tuple[str, float]] = []
    start = time.monotonic()
    for n in range(int(seconds * 10)):
        produced += await produce(rt, principal, per_tick)
        pause = start + (n + 1) * 0.1 - time.monotonic()
        if pause > 0:
            await asyncio.sleep(pause)
    return produced


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(
    name: str, produced: list[tuple[str, float]], arrived: dict[str, float], cpu_s: float
) -> dict[str, float]:
    latencies = sorted(arrived[i] - t for i, t in produced)
    first_commit = min(t for _, t in produced)
    last_arrival = max(arrived.values())
    figures = {
        "events": len(produced),
        "events_per_s": len(produced) / (last_arrival - first_commit),
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "max_ms": 1000 * latencies[-1],
        "worker_cpu_ms_per_event": 1000 * cpu_s / len(produced),
    }
    print(
        f"{name:<34} {figures['events']:>7,} events  {figures['events_per_s']:>8,.0f} events/s  "
        f"commit->arrival p50 {figures['p50_ms']:>7,.0f} ms  p99 {figures['p99_ms']:>7,.0f} ms  "
        f"max {figures['max_ms']:>7,.0f} ms  worker CPU {figures['worker_cpu_ms_per_event']:.2f} ms/event",
        flush=True,
    )
    return figures


async def reset(settings: Settings) -> None:
    rt = Runtime(settings)
    try:
        if not rt.is_sqlite:
            async with rt.engine.begin() as conn:
                await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
                await conn.execute(text("CREATE SCHEMA public"))
        await migrate(rt.engine)
    finally:
        await rt.dispose()


def start_worker(settings: Settings) -> subprocess.Popen[bytes]:
    # OUTREACH_WEBHOOK_* settings given to the bench reach the worker (e.g. the concurrency per endpoint)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OUTREACH_") or k.startswith("OUTREACH_WEBHOOK_")
    }
    env.update(
        OUTREACH_DATABASE_URL=settings.database_url,
        OUTREACH_SECRET_KEY=SECRET,
        OUTREACH_ALLOW_PRIVATE_URLS="1",
        OUTREACH_LOG_JSON="0",
        OUTREACH_LOG_LEVEL="WARNING",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "outreach_app.cli", "worker", "--only", "webhooks"], env=env, cwd=ROOT
    )


async def main(args: argparse.Namespace) -> None:
    url = args.database_url or os.environ.get("OUTREACH_DATABASE_URL")
    if not url:
        url = f"sqlite+aiosqlite:///{Path(tempfile.mkdtemp(prefix='bench-hooks-')) / 'outreach.db'}"
    settings = Settings(database_url=url, secret_key=SECRET, allow_private_urls=True)
    print(f"database: {url.split('://')[0]}   worker: outreach worker --only webhooks", flush=True)
    await reset(settings)

    port = free_port()
    receiver = subprocess.Popen(  # noqa: ASYNC220 - started once, before anything is measured
        [sys.executable, __file__, "--receiver", str(port), "--slow-s", str(args.slow_s)], cwd=ROOT
    )
    rt = Runtime(settings)
    worker = None
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for _ in range(100):
                try:
                    await stats(client)
                    break
                except httpx.HTTPError:
                    await asyncio.sleep(0.1)
            made = await rt.system(
                init_workspace, email="bench@example.com", name="Bench", workspace="Bench", plan="growth"
            )
            from outreach_core.auth.operations import authenticate_api_key

            principal = await rt.system_read(authenticate_api_key, made.apiKey)
            fast = CreateWebhookIn(url=f"http://127.0.0.1:{port}/fast", events=["lead.won"])
            await rt.execute(principal, create_webhook, fast)
            worker = start_worker(settings)
            await asyncio.sleep(2)  # the worker is up and idle

            cpu = cpu_seconds(worker.pid)
            backlog = await produce_backlog(rt, principal, args.backlog)
            arrived = await wait_all(client, "/fast", [i for i, _ in backlog], 300)
            cpu, used = cpu_seconds(worker.pid), cpu_seconds(worker.pid) - cpu
            report("1. backlog, one endpoint", backlog, arrived, used)
            load = await steady(rt, principal, args.rate, args.seconds)
            arrived = await wait_all(client, "/fast", [i for i, _ in load], 120)
            cpu, used = cpu_seconds(worker.pid), cpu_seconds(worker.pid) - cpu
            report(f"2. steady {args.rate}/s, one endpoint", load, arrived, used)

            slow = CreateWebhookIn(url=f"http://127.0.0.1:{port}/slow", events=["lead.won"])
            await rt.execute(principal, create_webhook, slow)
            before, started = (await stats(client))["posts"].get("/slow", 0), time.monotonic()
            load = await steady(rt, principal, args.rate, args.seconds)
            arrived = await wait_all(client, "/fast", [i for i, _ in load], 120)
            report(f"3. steady {args.rate}/s, + slow endpoint", load, arrived, cpu_seconds(worker.pid) - cpu)
            cpu = cpu_seconds(worker.pid)
            backlog = await produce_backlog(rt, principal, args.backlog)
            arrived = await wait_all(client, "/fast", [i for i, _ in backlog], 300)
            report("4. backlog, + slow endpoint", backlog, arrived, cpu_seconds(worker.pid) - cpu)
            slow_posts = (await stats(client))["posts"].get("/slow", 0) - before
            print(
                f"   slow endpoint ({args.slow_s:g} s per answer): {slow_posts} POSTs received in phases 3-4 "
                f"in {time.monotonic() - started:.0f} s (4 in flight: at most "
                f"{4 * ((time.monotonic() - started) // args.slow_s + 1):.0f}); the rest wait",
                flush=True,
            )
    finally:
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
        receiver.terminate()
        receiver.wait()
        await rt.dispose()


async def produce_backlog(rt: Runtime, principal: Any, count: int) -> list[tuple[str, float]]:
    produced: list[tuple[str, float]] = []
    while len(produced) < count:
        produced += await produce(rt, principal, min(1000, count - len(produced)))
    return produced


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url")
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--slow-s", type=float, default=10)
    parser.add_argument("--receiver", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.receiver:
        run_receiver(arguments.receiver, arguments.slow_s)
    else:
        asyncio.run(main(arguments))
