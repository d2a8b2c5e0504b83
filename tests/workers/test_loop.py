"""The shared worker loop (`workers.loop`): scheduling, back-off, graceful stop, signals. No database."""

from __future__ import annotations

import asyncio
import itertools
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
import structlog

from outreach_core.kernel.runtime import Runtime
from workers.loop import Worker, backoff_delay, run_workers, wake

# The loop only hands the runtime to the ticks; these ticks never touch it.
RUNTIME = cast(Runtime, object())
REPO_ROOT = Path(__file__).resolve().parents[2]


async def _run_until(workers: list[Worker], done: asyncio.Event) -> tuple[asyncio.Event, float]:
    """Run `workers` until `done` is set (at most 2 s), then stop them.

    Returns the stop event and how long stopping took.
    """
    stop = asyncio.Event()
    task = asyncio.create_task(run_workers(RUNTIME, workers, stop))
    try:
        await asyncio.wait_for(done.wait(), 2.0)
    finally:
        stop.set()
        started = time.monotonic()
        await asyncio.wait_for(task, 1.0)
    return stop, time.monotonic() - started


async def test_work_is_followed_at_once_by_the_next_tick_then_the_worker_sleeps() -> None:
    results = [3, 2, 1, 0]
    calls = 0
    idle = asyncio.Event()

    async def tick(runtime: Runtime) -> int:
        nonlocal calls
        calls += 1
        if calls >= len(results):
            idle.set()
            return 0
        return results[calls - 1]

    started = time.monotonic()
    await _run_until([Worker("count", tick, interval_s=60.0)], idle)
    # Three busy ticks ran back to back, the fourth found nothing; the 60 s sleep was cut short by stop.
    assert calls == 4
    assert time.monotonic() - started < 1.0


async def test_wake_cuts_an_idle_sleep_short_also_when_it_comes_during_a_tick() -> None:
    calls = 0
    third = asyncio.Event()

    async def idle(runtime: Runtime) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            wake("idle")  # as if another worker handed work on while this tick ran
        if calls == 3:
            third.set()
        return 0

    async def handing_on(runtime: Runtime) -> int:
        await asyncio.sleep(0.05)  # the idle worker has had its first tick and sleeps
        wake("idle", "not-running")
        return 0

    started = time.monotonic()
    workers = [Worker("idle", idle, interval_s=60.0), Worker("handing-on", handing_on, interval_s=60.0)]
    await _run_until(workers, third)
    # three ticks in well under one 60 s interval: woken from its sleep, then the wake during the second
    # tick skipped the sleep after it
    assert calls == 3
    assert time.monotonic() - started < 1.0
    wake("idle")  # nobody of that name runs any more: nothing happens


async def test_a_busy_worker_yields_to_the_others() -> None:
    busy_calls = 0
    other_ran = asyncio.Event()

    async def busy(runtime: Runtime) -> int:
        nonlocal busy_calls
        busy_calls += 1
        return 1  # always has more work

    async def other(runtime: Runtime) -> int:
        other_ran.set()
        return 0

    workers = [Worker("busy", busy, interval_s=60.0), Worker("other", other, interval_s=60.0)]
    await _run_until(workers, other_ran)
    assert busy_calls >= 1


async def test_errors_are_logged_backed_off_and_the_loop_keeps_running() -> None:
    interval = 0.01
    outcomes: list[str] = ["raise", "raise", "ok", "raise", "ok", "ok"]
    stamps: list[float] = []
    finished = asyncio.Event()

    async def tick(runtime: Runtime) -> int:
        stamps.append(time.monotonic())
        outcome = outcomes[len(stamps) - 1] if len(stamps) <= len(outcomes) else "ok"
        if len(stamps) >= len(outcomes):
            finished.set()
        if outcome == "raise":
            raise RuntimeError(f"boom {len(stamps)}")
        return 0

    with structlog.testing.capture_logs() as logs:
        await _run_until([Worker("flaky", tick, interval_s=interval, max_backoff_s=5.0)], finished)

    assert len(stamps) >= len(outcomes)  # the loop survived three errors
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    # After the 1st failure: interval * 2 (minus <= 10 % jitter); after the 2nd: interval * 4.
    assert gaps[0] >= interval * 2 * 0.85
    assert gaps[1] >= interval * 4 * 0.85
    # After the success the next tick waits the normal interval; after the 3rd failure, back-off again.
    assert gaps[2] >= interval * 0.85
    assert gaps[3] >= interval * 2 * 0.85

    errors = [e for e in logs if e["event"] == "worker_error"]
    assert [e["worker"] for e in errors] == ["flaky"] * 3
    assert all(e["log_level"] == "error" for e in errors)
    assert [str(e["exc_info"]) for e in errors] == ["boom 1", "boom 2", "boom 4"]
    # The count of consecutive failures resets after a successful tick.
    assert [e["failures"] for e in errors] == [1, 2, 1]


def test_backoff_doubles_is_capped_and_jittered_downwards() -> None:
    worker = Worker("w", _never, interval_s=1.0, max_backoff_s=30.0)
    for failures, ceiling in [(1, 2.0), (2, 4.0), (3, 8.0), (4, 16.0), (5, 30.0), (50, 30.0), (10_000, 30.0)]:
        for _ in range(20):
            assert ceiling * 0.9 <= backoff_delay(worker, failures) <= ceiling
    with pytest.raises(ValueError):
        backoff_delay(worker, 0)


async def test_stop_interrupts_a_long_sleep() -> None:
    ticked = asyncio.Event()

    async def tick(runtime: Runtime) -> int:
        ticked.set()
        return 0

    stop = asyncio.Event()
    task = asyncio.create_task(run_workers(RUNTIME, [Worker("sleepy", tick, interval_s=60.0)], stop))
    await asyncio.sleep(0.05)
    assert ticked.is_set()
    stop.set()
    started = time.monotonic()
    await asyncio.wait_for(task, 1.0)
    assert time.monotonic() - started < 1.0


async def test_stop_interrupts_a_back_off() -> None:
    failed = asyncio.Event()

    async def tick(runtime: Runtime) -> int:
        failed.set()
        raise RuntimeError("down")

    with structlog.testing.capture_logs():
        _, stopping = await _run_until([Worker("down", tick, interval_s=30.0, max_backoff_s=600.0)], failed)
    assert stopping < 1.0


async def test_a_running_tick_finishes_before_the_loop_exits() -> None:
    entered = asyncio.Event()
    completed = False
    calls = 0

    async def tick(runtime: Runtime) -> int:
        nonlocal completed, calls
        calls += 1
        entered.set()
        await asyncio.sleep(0.1)
        completed = True
        return 1  # would run again at once if the loop did not notice the stop

    stop = asyncio.Event()
    task = asyncio.create_task(run_workers(RUNTIME, [Worker("slow", tick, interval_s=60.0)], stop))
    await asyncio.wait_for(entered.wait(), 1.0)
    await asyncio.sleep(0.02)
    stop.set()  # while the tick is in its 0.1 s sleep
    assert not completed
    await asyncio.wait_for(task, 1.0)
    assert completed
    assert calls == 1


async def test_final_tick_runs_once_on_stop_and_sleep_after_work_waits() -> None:
    calls = 0
    first = asyncio.Event()

    async def tick(runtime: Runtime) -> int:
        nonlocal calls
        calls += 1
        first.set()
        return 5  # always "handled something"; sleep_after_work still makes the loop wait

    worker = Worker("flush", tick, interval_s=60.0, sleep_after_work=True, final_tick=True)
    await _run_until([worker], first)
    assert calls == 2  # the first tick, then the final one on stop


async def test_no_workers_returns_at_once_and_duplicate_names_are_refused() -> None:
    await asyncio.wait_for(run_workers(RUNTIME, [], asyncio.Event()), 0.5)
    with pytest.raises(ValueError, match="unique"):
        await run_workers(RUNTIME, [Worker("a", _never, 1.0), Worker("a", _never, 1.0)], asyncio.Event())


def test_worker_rejects_negative_intervals() -> None:
    with pytest.raises(ValueError):
        Worker("w", _never, interval_s=-1.0)
    with pytest.raises(ValueError):
        Worker("w", _never, interval_s=1.0, max_backoff_s=-1.0)


SCRIPT = textwrap.dedent(
    """
    import asyncio

    from workers.loop import Worker, install_signal_handlers, run_workers


    async def tick(runtime):
        print("tick", flush=True)
        return 0


    async def main():
        stop = asyncio.Event()
        install_signal_handlers(stop)
        await run_workers(None, [Worker("printer", tick, interval_s=0.05)], stop)
        print("stopped", flush=True)


    asyncio.run(main())
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_stops_a_worker_process_gracefully() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 5.0
        while "tick" not in seen:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line is not None, f"exited before the first tick: {seen!r}"
            seen.append(line)
        proc.send_signal(signal.SIGTERM)
        returncode = proc.wait(timeout=5.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=5.0)
    while (line := lines.get_nowait()) is not None:
        seen.append(line)
    assert returncode == 0, seen
    assert seen[-1] == "stopped", seen


async def _never(runtime: Any) -> int:
    raise AssertionError("not called")
