"""`GET /healthz` and `GET /readyz` as a probe sees them over HTTP: ready with the database at head and the
workers ticking; 503 with the reason when a worker stops ticking, the database is gone or not migrated."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

import workers.health
from outreach_app.asgi import build_app
from outreach_core.kernel.db.engine import create_engine
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.runtime import Runtime
from tests.conftest import serving
from workers.loop import Worker, run_workers


@contextlib.asynccontextmanager
async def app_on(runtime: Runtime, engine: Any = None, **build: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The whole app (on `engine` when given) behind a real server, and a client for it."""
    own = Runtime(runtime.settings, engine=engine or runtime.engine, ports=runtime.ports)
    async with (
        serving(build_app(own, flush_usage=False, **build)) as base,
        httpx.AsyncClient(base_url=base, timeout=10) as client,
    ):
        yield client


@contextlib.asynccontextmanager
async def running(*workers_: Worker) -> AsyncIterator[None]:
    stop = asyncio.Event()
    task = asyncio.create_task(run_workers(None, list(workers_), stop))  # type: ignore[arg-type]
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def test_healthz_answers_without_auth(runtime: Runtime) -> None:
    async with app_on(runtime) as client:
        answer = await client.get("/healthz")
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}


async def test_ready_while_workers_tick_and_503_with_the_reason_once_one_stops(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers.health, "MIN_WINDOW_S", 0.3)
    healthy = True

    async def tick(_: Any) -> int:
        if not healthy:
            raise ConnectionError("the SMTP relay is down")
        return 0

    async with app_on(runtime) as client, running(Worker("probe", tick, interval_s=0.1, max_backoff_s=5)):
        await asyncio.sleep(0.2)
        ready = await client.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json() == {"status": "ready", "workers": ["probe"]}

        healthy = False  # every tick fails from now on: no successful tick within three intervals
        await asyncio.sleep(0.8)
        not_ready = await client.get("/readyz")
        assert not_ready.status_code == 503
        [reason] = not_ready.json()["reasons"]
        assert reason.startswith("worker probe: no successful tick for ")
        assert "last error: ConnectionError: the SMTP relay is down" in reason

        healthy = True  # the next retry (after a back-off under a second) succeeds
        for _ in range(40):
            if (await client.get("/readyz")).status_code == 200:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("still not ready after the worker recovered")
    async with app_on(runtime) as client:  # a stopped worker is no longer this process's worker
        assert (await client.get("/readyz")).json() == {"status": "ready", "workers": []}


async def test_a_long_tick_is_work_not_a_stall(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers.health, "MIN_WINDOW_S", 0.1)
    release = asyncio.Event()

    async def tick(_: Any) -> int:
        await release.wait()
        return 1

    async with app_on(runtime) as client, running(Worker("merge", tick, interval_s=0.05)):
        await asyncio.sleep(0.5)
        assert (await client.get("/readyz")).status_code == 200
        monkeypatch.setattr(workers.health, "STUCK_AFTER_S", 0.2)
        stuck = await client.get("/readyz")
        assert stuck.status_code == 503
        assert stuck.json()["reasons"][0].startswith("worker merge: one tick has run for ")
        release.set()


async def _scratch_database(runtime: Runtime, tmp_path: Path, name: str) -> tuple[str, Any]:
    """A second database of the session's engine kind, and a function that drops it."""
    url = make_url(runtime.settings.database_url)
    if runtime.is_sqlite:
        file = tmp_path / f"{name}.db"
        return f"sqlite+aiosqlite:///{file}", lambda: file.unlink(missing_ok=True)
    database = f"{url.database}_{name}_{os.getpid()}"
    admin = create_engine(url.set(database="postgres").render_as_string(hide_password=False))
    async with admin.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text(f'DROP DATABASE IF EXISTS "{database}"'))
        await conn.execute(text(f'CREATE DATABASE "{database}"'))

    async def drop() -> None:
        async with admin.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        await admin.dispose()

    return url.set(database=database).render_as_string(hide_password=False), drop


async def test_503_when_the_database_stops_answering(runtime: Runtime, tmp_path: Path) -> None:
    url, drop = await _scratch_database(runtime, tmp_path, "readyz_gone")
    engine = create_engine(url)
    await migrate(engine)
    try:
        async with app_on(runtime, engine) as client:
            assert (await client.get("/readyz")).status_code == 200
            await engine.dispose()
            if runtime.is_sqlite:  # the file is replaced by something that is no database
                file = Path(make_url(url).database or "")
                file.unlink()
                for extra in ("-wal", "-shm"):
                    Path(f"{file}{extra}").unlink(missing_ok=True)
                file.write_bytes(b"not a database " * 100)
            else:
                await drop()
            answer = await client.get("/readyz")
            assert (await client.get("/healthz")).status_code == 200  # the process itself still answers
    finally:
        await engine.dispose()
        if not runtime.is_sqlite:
            await drop()
    assert answer.status_code == 503
    assert answer.json()["status"] == "not_ready"
    [reason] = answer.json()["reasons"]
    assert reason.startswith("database: "), reason


async def test_503_until_the_database_is_migrated(runtime: Runtime, tmp_path: Path) -> None:
    url, drop = await _scratch_database(runtime, tmp_path, "readyz_fresh")
    engine = create_engine(url)
    try:
        async with app_on(runtime, engine) as client:
            fresh = await client.get("/readyz")
            await migrate(engine)
            migrated = await client.get("/readyz")
    finally:
        await engine.dispose()
        result = drop()
        if asyncio.iscoroutine(result):
            await result
    assert fresh.status_code == 503
    assert fresh.json()["reasons"][0].startswith("migrations not at head: database at none, code at 00")
    assert migrated.status_code == 200


def test_worker_problems_counts_from_the_start_before_the_first_tick() -> None:
    beat = {
        "name": "sender",
        "interval_s": 1.0,
        "started_at": 100.0,
        "tick_started_at": None,
        "last_ok_at": None,
    }
    assert workers.health.worker_problems([beat], now=104.0) == []
    assert workers.health.worker_problems([beat], now=106.0) == [
        "worker sender: no tick yet for 6.0 s (limit 5 s)"
    ]
