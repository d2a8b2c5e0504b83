"""SQLite: one process's write transactions take turns instead of polling SQLite's single write lock.

Before, a writer that found the lock taken polled it with growing sleeps until `busy_timeout`; during a busy
import (a merge, chunks arriving, several workers writing) requests failed with "database is locked" (500)
after 15 s. Here the busy timeout is cut to 50 ms so that the same starvation shows in a fraction of a
second: writers queued behind a 300 ms write transaction must all succeed, in the order they arrived.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event, text

from outreach_core.kernel.context import SystemContext
from outreach_core.kernel.db.engine import create_engine
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings


@pytest.fixture
async def impatient_runtime(runtime: Runtime, settings: Settings) -> AsyncIterator[Runtime]:
    """A second runtime on the test database whose SQLite connections give up after 50 ms of waiting."""
    if not runtime.is_sqlite:
        pytest.skip("SQLite's single write lock; PostgreSQL writers lock rows, not the database")
    engine = create_engine(settings.database_url)

    @event.listens_for(engine.sync_engine, "connect")
    def _impatient(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA busy_timeout=50")
        cur.close()

    rt = Runtime(settings, engine=engine, ports=runtime.ports)
    yield rt
    await engine.dispose()


async def test_writers_wait_their_turn_behind_a_long_write_instead_of_failing(
    impatient_runtime: Runtime,
) -> None:
    order: list[str] = []

    async def write(ctx: SystemContext, name: str, hold_s: float) -> str:
        # a real write: the transaction has taken SQLite's write lock (BEGIN IMMEDIATE) before it runs
        await ctx.conn.execute(text("CREATE TEMP TABLE IF NOT EXISTS turns (n TEXT)"))
        await ctx.conn.execute(text("INSERT INTO turns VALUES (:n)"), {"n": name})
        order.append(name)
        await asyncio.sleep(hold_s)
        return name

    long = asyncio.create_task(impatient_runtime.system(write, "long", 0.3))
    await asyncio.sleep(0.05)  # the long write holds the lock now
    queued = [asyncio.create_task(impatient_runtime.system(write, f"w{i}", 0.01)) for i in range(8)]
    results = await asyncio.gather(long, *queued, return_exceptions=True)

    assert [r for r in results if isinstance(r, BaseException)] == []
    assert order == ["long", *(f"w{i}" for i in range(8))]


async def test_readers_do_not_wait_for_a_write_in_progress(impatient_runtime: Runtime) -> None:
    async def hold(ctx: SystemContext) -> None:
        await ctx.conn.execute(text("CREATE TEMP TABLE IF NOT EXISTS turns (n TEXT)"))
        await asyncio.sleep(0.5)

    async def read(ctx: SystemContext) -> int:
        return int((await ctx.conn.execute(text("SELECT 1"))).scalar_one())

    writer = asyncio.create_task(impatient_runtime.system(hold))
    await asyncio.sleep(0.05)
    started = asyncio.get_running_loop().time()
    assert await impatient_runtime.system_read(read) == 1
    assert asyncio.get_running_loop().time() - started < 0.3
    assert not writer.done()
    await writer


HOG = """
import asyncio, sys, time
from sqlalchemy import text
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings

async def hold(ctx, n):
    await ctx.conn.execute(text("CREATE TEMP TABLE IF NOT EXISTS turns (n INTEGER)"))
    await ctx.conn.execute(text("INSERT INTO turns VALUES (:n)"), {"n": n})
    time.sleep(0.1)  # the merge's work inside its transaction: CPU, not a pause of the event loop

async def main():
    runtime = Runtime(Settings(database_url=sys.argv[1]))
    print("writing", flush=True)
    n = 0
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:  # back to back, as the merge writes part after part
        await runtime.system(hold, n)
        n += 1
    print(n, flush=True)
    await runtime.dispose()

asyncio.run(main())
"""


async def test_another_process_writing_back_to_back_lets_this_one_write_in_turn(
    impatient_runtime: Runtime, settings: Settings
) -> None:
    """The worker process (the merge) writes transactions back to back; this process's writes, which give
    up after 50 ms at SQLite's own lock, each wait about one of the other's transactions (100 ms), never
    fail: before the turns, the first one failed with "database is locked"."""
    import subprocess
    import sys
    import time

    hog = subprocess.Popen(
        [sys.executable, "-c", HOG, settings.database_url, "3"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert hog.stdout is not None
        assert hog.stdout.readline().strip() == "writing"
        await asyncio.sleep(0.3)

        async def write(ctx: SystemContext, n: int) -> None:
            await ctx.conn.execute(text("CREATE TEMP TABLE IF NOT EXISTS mine (n INTEGER)"))
            await ctx.conn.execute(text("INSERT INTO mine VALUES (:n)"), {"n": n})

        waits = []
        for n in range(10):
            started = time.monotonic()
            await impatient_runtime.system(write, n)  # raises "database is locked" without turns
            waits.append(time.monotonic() - started)
            await asyncio.sleep(0.05)
        other = int((hog.communicate(timeout=30)[0] or "0").strip())
    finally:
        if hog.poll() is None:
            hog.kill()
    assert hog.returncode == 0
    assert other > 5  # the other process kept writing meanwhile
    assert max(waits) < 0.5, waits  # about one of its transactions each, never a queue of them
