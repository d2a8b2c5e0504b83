"""Click redirects and open pixels as `outreach serve` runs them, recording included (docs/tracking.md).

Starts `outreach serve` (with its worker process) on a free port against OUTREACH_DATABASE_URL (default: a
fresh SQLite file; give PostgreSQL a database of its own), writes `--sends` sent emails straight into the
database, then drives `/l/<token>` and `/o/<token>` (half each, a browser's user agent, every send a day
old, so every hit counts as a person's) from `--concurrency` keep-alive connections of a minimal HTTP/1.1
client (httpx would cost this process more CPU than the server spends). Prints requests/s, latency
percentiles, the CPU of the server process per request, and checks that every answered hit is in the
database. `--crash` kills the server (SIGKILL) halfway, replays its journal as the next start would, and
counts the answered hits that were not recorded. The journal is on by default on both engines (beside a
SQLite database; with PostgreSQL in $XDG_STATE_HOME/outreach/tracking-journal/<database>, docs/tracking.md);
OUTREACH_TRACKING_JOURNAL=off measures the path without one, =<dir> puts it elsewhere.
Then the stages alone, in this process: verifying a token, rewriting an email, recording a batch of hits.

    .venv/bin/python bench/tracking_redirect.py [--requests 20000] [--concurrency 32] [--sends 1000]
        [--rate 1000] [--crash]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import signal
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from _seed import bench_lead  # noqa: E402
from _server import served  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

from outreach_core.kernel.bulk import insert_rows  # noqa: E402
from outreach_core.kernel.db.tables import campaign_leads, leads, sends  # noqa: E402
from outreach_core.kernel.ids import new_ids  # noqa: E402
from outreach_core.kernel.runtime import Runtime  # noqa: E402
from outreach_core.kernel.settings import Settings  # noqa: E402
from outreach_core.tracking.journal import Journal  # noqa: E402
from outreach_core.tracking.record import record_hits  # noqa: E402
from outreach_core.tracking.recorder import HitRecorder  # noqa: E402
from outreach_core.tracking.rewrite import Tracking, track_email  # noqa: E402
from outreach_core.tracking.rules import Hit  # noqa: E402
from outreach_core.tracking.tokens import click_url, open_url, read_click  # noqa: E402

AGENT = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 Version/17.4 Safari/605.1.15"
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


async def seed(settings: Settings, workspace_id: str, campaign_id: str, n: int) -> list[str]:
    """`n` leads in the campaign, each sent its first email a day ago; returns the send ids."""
    rt = Runtime(settings)
    now = dt.datetime.now(dt.UTC)
    lead_ids, cl_ids, send_ids = new_ids("lead", n), new_ids("cl", n), new_ids("snd", n)
    owner: Any = None
    async with rt.engine.begin() as conn:
        owner = SimpleNamespace(conn=conn, workspace_id=workspace_id)
        await insert_rows(owner, leads, [bench_lead(i, lead_ids[i], workspace_id, now) for i in range(n)])
        await insert_rows(
            owner,
            campaign_leads,
            [
                {"id": cl_ids[i], "workspace_id": workspace_id, "campaign_id": campaign_id,
                 "lead_id": lead_ids[i], "added_at": now, "status": "contacted", "step": 1}
                for i in range(n)
            ],
        )  # fmt: skip
        await insert_rows(
            owner,
            sends,
            [
                {"id": send_ids[i], "workspace_id": workspace_id, "campaign_id": campaign_id,
                 "campaign_lead_id": cl_ids[i], "lead_id": lead_ids[i], "step": 0,
                 "message_id": f"<{send_ids[i]}@bench.example>", "to_email": f"person{i}@bench.example",
                 "subject": "Hello", "body_html": "<p>Hello</p>", "body_text": "Hello", "status": "sent",
                 "attempts": 1, "created_at": now - dt.timedelta(days=1),
                 "sent_at": now - dt.timedelta(days=1)}
                for i in range(n)
            ],
        )  # fmt: skip
    await rt.dispose()
    return send_ids


async def replayed(settings: Settings) -> int:
    """What the next start does: the dead server's journal replayed (0 without a journal)."""
    directory = settings.tracking_journal_dir
    if directory is None:
        return 0
    rt = Runtime(settings)

    async def flush(hits: Any, replay: bool) -> int:
        return await rt.system(record_hits, hits, replay=replay)

    recorder = HitRecorder(flush, wait_s=0, max_queued=100_000, journal=Journal(directory))
    count = await recorder.replay()
    await recorder.close()
    await rt.dispose()
    return count


async def counted(settings: Settings) -> int:
    rt = Runtime(settings)
    async with rt.engine.connect() as conn:
        total = (
            await conn.execute(select(func.coalesce(func.sum(sends.c.open_count + sends.c.click_count), 0)))
        ).scalar_one()
    await rt.dispose()
    return int(total)


async def drive(
    base: str, paths: list[str], concurrency: int, kill_after: int | None, pid: int, rate: float = 0
) -> tuple[list[float], int, float]:
    """Request every path over `concurrency` keep-alive connections; (latencies ms, answered, seconds).
    With `rate`, request i is due at i/rate seconds (open loop, as clicks arrive) and its latency counts
    from then, waiting for a free connection included; without, each connection sends its next request
    as soon as the last is answered. With `kill_after`, the server is killed once that many have been
    answered."""
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    latencies: list[float] = []
    todo = iter(enumerate(paths))
    answered = 0
    killed = False
    began = time.perf_counter()

    async def connection() -> None:
        nonlocal answered, killed
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for i, path in todo:
                request = f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: {AGENT}\r\n\r\n"
                start = time.perf_counter()
                if rate:
                    due = began + i / rate
                    if due > start:
                        await asyncio.sleep(due - start)
                    start = due
                writer.write(request.encode())
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head[9:12])
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                latencies.append((time.perf_counter() - start) * 1000)
                if status not in (200, 302):
                    raise RuntimeError(f"{path}: {status}")
                answered += 1
                if kill_after is not None and answered >= kill_after and not killed:
                    killed = True
                    os.killpg(pid, signal.SIGKILL)
        except (ConnectionError, asyncio.IncompleteReadError):
            if kill_after is None:
                raise
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return latencies, answered, time.perf_counter() - began


def stages(settings: Settings, send_ids: list[str]) -> list[tuple[str, float]]:
    """CPU microseconds of the steps in this process."""
    secret = settings.resolved_secret_key()
    out = []
    tokens = [click_url(secret, "", s, f"https://example.com/page/{i}").rsplit("/", 1)[1] for i, s in
              enumerate(send_ids[:1000])]  # fmt: skip
    t = time.process_time()
    for token in tokens * 5:
        read_click([secret], token)
    out.append(("verify a click token", (time.process_time() - t) / (len(tokens) * 5) * 1e6))
    body = "".join(f'<p>Paragraph {i}, <a href="https://example.com/p/{i}">a link</a>.</p>' for i in range(5))
    text = " ".join(f"Paragraph {i} (https://example.com/p/{i})." for i in range(5))
    tracking = Tracking(True, True, secret, "https://links.example.com", "snd_x", None)
    t = time.process_time()
    for _ in range(2000):
        track_email(body, text, tracking)
    out.append(("rewrite an email (5 links + pixel)", (time.process_time() - t) / 2000 * 1e6))
    t = time.process_time()
    for i in range(5000):
        open_url(secret, "https://links.example.com", send_ids[i % len(send_ids)])
    out.append(("sign an open token", (time.process_time() - t) / 5000 * 1e6))

    async def record() -> float:
        rt = Runtime(settings)
        now = dt.datetime.now(dt.UTC)
        hits = [Hit("click", send_ids[i % len(send_ids)], now, "https://e.example/", False, AGENT, None)
                for i in range(500)]  # fmt: skip
        await rt.system(record_hits, hits[:10])  # warm up
        t = time.process_time()
        for _ in range(10):
            await rt.system(record_hits, hits)
        spent = (time.process_time() - t) / 5000 * 1e6
        await rt.dispose()
        return spent

    out.append(("record a hit (batches of 500, this process's share)", asyncio.run(record())))
    if settings.database_url.startswith("postgresql"):
        for flushed in (True, False):
            walls, cpu = asyncio.run(commits(settings, send_ids, flushed))
            q = statistics.quantiles(walls, n=20)
            kind = "flushed" if flushed else "not flushed (no journal)"
            out.append((f"a 10-hit transaction, {kind}: wall p50 {statistics.median(walls):.2f} ms, "
                        f"p95 {q[18]:.2f} ms; CPU", cpu))  # fmt: skip
    return out


async def commits(settings: Settings, send_ids: list[str], flushed: bool) -> tuple[list[float], float]:
    """Wall ms of 100 transactions of 10 hits each, one after the other, and this process's CPU µs per
    transaction."""
    rt = Runtime(settings)
    now = dt.datetime.now(dt.UTC)
    walls = []
    c = time.process_time()
    for k in range(100):
        ids = [send_ids[(k * 10 + i) % len(send_ids)] for i in range(10)]
        hits = [Hit("click", send_id, now, "https://e.example/", False, AGENT, None) for send_id in ids]
        t = time.perf_counter()
        await rt.system(record_hits, hits, flushed=flushed)
        walls.append((time.perf_counter() - t) * 1000)
    cpu = (time.process_time() - c) / 100 * 1e6
    await rt.dispose()
    return walls, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sends", type=int, default=1000)
    parser.add_argument("--crash", action="store_true")
    parser.add_argument("--rate", type=float, default=0, help="requests/s, open loop (0: as fast as it goes)")
    args = parser.parse_args()
    with served(plan="growth", workers=True) as server:
        settings = Settings(
            database_url=server.env["OUTREACH_DATABASE_URL"], secret_key=server.env["OUTREACH_SECRET_KEY"]
        )
        headers = {"Authorization": f"Bearer {server.key}"}
        with httpx.Client(base_url=server.base, headers=headers, timeout=30) as http:
            workspace_id = http.get("/api/v1/me").json()["workspace"]["id"]
            campaign_id = http.post("/api/v1/campaigns", json={"name": "Tracking bench"}).json()["id"]
        send_ids = asyncio.run(seed(settings, workspace_id, campaign_id, args.sends))
        secret = settings.resolved_secret_key()
        paths = []
        for i in range(args.requests):
            send_id = send_ids[i % len(send_ids)]
            url = (
                click_url(secret, "", send_id, f"https://example.com/page/{i % 7}")
                if i % 2
                else open_url(secret, "", send_id)
            )
            paths.append(url)
        assert server.process is not None
        pid = server.process.pid
        # counted before the warm-up too: a reused database holds earlier runs' hits, and the warm-up's last
        # ones may still be on their way (journaled and answered before their commit)
        earlier = asyncio.run(counted(settings))
        asyncio.run(drive(server.base, paths[:500], 8, None, pid))  # warm up
        before_db = asyncio.run(counted(settings))
        while before_db < earlier + 500:
            time.sleep(0.05)
            before_db = asyncio.run(counted(settings))
        cpu_before = cpu_s(pid)
        kill_after = args.requests // 2 if args.crash else None
        latencies, answered, elapsed = asyncio.run(
            drive(server.base, paths, args.concurrency, kill_after, pid, args.rate)
        )
        cpu = None if args.crash else cpu_s(pid) - cpu_before
        settle = time.perf_counter()
        recorded = asyncio.run(counted(settings)) - before_db
        replays = asyncio.run(replayed(settings)) if args.crash else 0
        recorded += replays
        while not args.crash and recorded < answered and time.perf_counter() - settle < 10:
            time.sleep(0.05)
            recorded = asyncio.run(counted(settings)) - before_db
        settled_ms = (time.perf_counter() - settle) * 1000
    q = statistics.quantiles(latencies, n=100)
    engine = "PostgreSQL" if settings.database_url.startswith("postgresql") else "SQLite"
    directory = settings.tracking_journal_dir
    engine += f", journal {f'on ({directory})' if directory else 'off'}"
    print(f"\n{engine}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.requests:,} requests "
          f"(half /l/, half /o/) over {args.concurrency} keep-alive connections"
          f"{f', arriving at {args.rate:,.0f}/s' if args.rate else ', closed loop'}, {args.sends:,} sends, "
          f"`outreach serve` with its worker process\n")  # fmt: skip
    print("| figure | value |")
    print("|---|---:|")
    print(f"| answered | {answered:,} |")
    print(f"| requests/s | {answered / elapsed:,.0f} |")
    print(f"| p50 / p95 / p99 ms | {q[49]:.1f} / {q[94]:.1f} / {q[98]:.1f} |")
    if cpu is not None:
        print(f"| server CPU µs per request | {cpu / answered * 1e6:,.0f} |")
    print(f"| hits recorded | {recorded:,} |")
    if args.crash:
        print(f"| of which replayed from the journal after the kill | {replays:,} |")
        print(f"| answered but not recorded (killed halfway) | {max(0, answered - recorded):,} |")
    else:
        print(f"| time after the last answer until all were recorded | {settled_ms:,.0f} ms |")
    print()
    print("| stage (this process) | CPU µs |")
    print("|---|---:|")
    for name, micros in stages(settings, send_ids):
        print(f"| {name} | {micros:,.1f} |")


if __name__ == "__main__":
    main()
