"""The shared loop that runs every worker.

Each worker is one `tick(runtime) -> int` function that handles one batch and says how many items it
handled. `run_workers` runs every worker as its own task:

- a tick that handled something (`> 0`) is followed at once by the next one (after yielding to the event
  loop, so one busy worker cannot starve the others or the web server);
- a tick that found nothing (`0`) is followed by a sleep of `interval_s`, cut short when `stop` is set or
  when another worker of the process calls `wake` with its name (work it made for it is waiting);
- a tick that raised is logged (`worker_error`) and retried after an exponential back-off
  (`interval_s * 2**failures`, capped at `max_backoff_s`, with a little jitter), which resets after the
  next successful tick.

Stopping is graceful: when `stop` is set, a tick that is running is allowed to finish, sleeping workers
wake up at once, and `run_workers` returns when every worker has exited.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from workers.health import BEATS

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

__all__ = [
    "Tick",
    "Worker",
    "backoff_delay",
    "install_signal_handlers",
    "poll_soon",
    "run_workers",
    "runs_here",
    "wake",
]

Tick = Callable[["Runtime"], Awaitable[int]]
"""One batch of a worker's work; returns how many items it handled."""

_log = structlog.get_logger()

# A worker with interval 0 still waits at least this long before retrying after an error.
_MIN_BACKOFF_BASE_S = 0.01
# 2**30 times any sensible interval is far above any cap; stops the power from growing without bound.
_MAX_BACKOFF_EXPONENT = 30
# Back-off delays are shortened by up to this fraction so that workers failing together spread out.
_JITTER = 0.1
# The running loops of this process by worker name, each with the event that cuts its idle sleep short.
_WAKE: dict[str, set[asyncio.Event]] = {}
SOON_S = 0.25
"""The longest idle sleep of a worker that asked for `poll_soon`."""
_SOON: set[str] = set()


@dataclass(frozen=True)
class Worker:
    """A named periodic job run by `run_workers`.

    `sleep_after_work` makes the loop sleep `interval_s` even after a tick that handled items, for workers
    whose tick always takes everything there is (the usage flusher): running them again at once would only
    turn their batching into one write per request.

    `final_tick` runs the tick once more when the loop stops, for workers that hold state in memory that
    would otherwise be lost on shutdown (again the usage flusher).

    `on_stop` runs once when the loop stops, for workers whose tick starts work that outlives it (the
    webhook worker's POSTs): it waits for that work and records it.
    """

    name: str
    tick: Tick
    interval_s: float
    max_backoff_s: float = 300.0
    sleep_after_work: bool = False
    final_tick: bool = False
    on_stop: Callable[[Runtime], Awaitable[object]] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a worker needs a name")
        if self.interval_s < 0:
            raise ValueError(f"worker {self.name}: interval_s must be >= 0, got {self.interval_s}")
        if self.max_backoff_s < 0:
            raise ValueError(f"worker {self.name}: max_backoff_s must be >= 0, got {self.max_backoff_s}")


def backoff_delay(worker: Worker, failures: int, rng: random.Random | None = None) -> float:
    """Seconds to wait after the `failures`-th consecutive failed tick of `worker` (`failures >= 1`).

    `interval_s * 2**failures` (at least `_MIN_BACKOFF_BASE_S * 2**failures`), capped at `max_backoff_s`,
    then shortened by up to 10 % at random. Never exceeds `max_backoff_s`.
    """
    if failures < 1:
        raise ValueError(f"failures must be >= 1, got {failures}")
    base = max(worker.interval_s, _MIN_BACKOFF_BASE_S)
    delay = min(worker.max_backoff_s, base * 2.0 ** min(failures, _MAX_BACKOFF_EXPONENT))
    fraction = rng.random() if rng is not None else random.random()
    return delay * (1.0 - _JITTER * fraction)


async def run_workers(runtime: Runtime, workers: Sequence[Worker], stop: asyncio.Event) -> None:
    """Run every worker in `workers` until `stop` is set; return once all of them have exited.

    Each worker runs as its own task (see the module docstring for the scheduling rules). Errors raised by
    a tick never end the loop; they are logged and retried with back-off. If `run_workers` itself is
    cancelled, every worker task is cancelled with it.
    """
    names = [w.name for w in workers]
    if len(set(names)) != len(names):
        raise ValueError(f"worker names must be unique, got {names}")
    if not workers:
        return
    _log.info("workers_started", workers=names)
    try:
        async with asyncio.TaskGroup() as group:
            for worker in workers:
                group.create_task(_run_one(runtime, worker, stop), name=f"worker:{worker.name}")
    finally:
        _log.info("workers_stopped", workers=names)


def install_signal_handlers(stop: asyncio.Event) -> None:
    """Set `stop` on SIGTERM or SIGINT, so that `run_workers` shuts down gracefully.

    Must be called from inside the running event loop. After the first signal the handlers are removed,
    so a second SIGINT or SIGTERM ends the process at once (Python's default behaviour) instead of waiting
    for running ticks. Where signal handlers are unavailable (Windows, or a thread other than the main
    one) this does nothing.
    """
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)

    def on_signal(signum: int) -> None:
        _log.info("shutdown_requested", signal=signal.Signals(signum).name)
        stop.set()
        for sig in signals:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)

    for sig in signals:
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError):
            # NotImplementedError: no signal support in this loop (Windows).
            # RuntimeError: not the main thread.
            return


def wake(*names: str) -> None:
    """Cut short the idle sleep of the named workers running in this process: their next tick starts at once
    (or right after the running one, when the wake comes during a tick). A worker that handed work on (the
    `import` worker, when an import is stored) calls this, so that the next stage starts without waiting out
    its poll interval. Workers in other processes are not reached; they find the work at their next poll
    (see `poll_soon`)."""
    for name in names:
        for event in _WAKE.get(name, ()):
            event.set()


def poll_soon(*names: str) -> None:
    """Shorten the next idle sleep of the named workers of this process to at most `SOON_S`: a worker
    whose work another process is about to hand on, which no `wake` of that process reaches (under
    `outreach serve` the `import` worker runs in a child of its own), asks for this while it waits."""
    _SOON.update(names)


def runs_here(name: str) -> bool:
    """Whether a worker of that name runs in this process (its `wake` then reaches the others here)."""
    return name in _WAKE


# --------------------------------------------------------------------------------------------------------


async def _run_one(runtime: Runtime, worker: Worker, stop: asyncio.Event) -> None:
    """The loop of one worker; returns when `stop` is set (after the running tick has finished)."""
    BEATS.started(worker.name, worker.interval_s)  # for /readyz and /metrics (workers/health.py)
    try:
        await _loop(runtime, worker, stop)
    finally:
        BEATS.stopped(worker.name)


async def _loop(runtime: Runtime, worker: Worker, stop: asyncio.Event) -> None:
    woken = asyncio.Event()
    _WAKE.setdefault(worker.name, set()).add(woken)
    try:
        await _ticks(runtime, worker, stop, woken)
    finally:
        _WAKE[worker.name].discard(woken)
        if not _WAKE[worker.name]:
            del _WAKE[worker.name]


async def _ticks(runtime: Runtime, worker: Worker, stop: asyncio.Event, woken: asyncio.Event) -> None:
    failures = 0
    while not stop.is_set():
        woken.clear()  # a wake from now on (during the tick too) skips the idle sleep after it
        BEATS.tick_started(worker.name)
        try:
            handled = await worker.tick(runtime)
        except Exception as exc:
            BEATS.tick_failed(worker.name, exc)
            failures += 1
            delay = backoff_delay(worker, failures)
            _log_error(worker, exc, failures=failures, retry_in_s=round(delay, 3))
            await _sleep(stop, delay)
            continue
        BEATS.tick_ended(worker.name, handled)
        failures = 0
        if handled > 0 and not worker.sleep_after_work:
            await asyncio.sleep(0)  # let the other tasks run before the next batch
        else:
            await _sleep(stop, _idle_interval(worker), woken)
    if worker.final_tick:
        try:
            await worker.tick(runtime)
        except Exception as exc:
            _log_error(worker, exc, final=True)
    if worker.on_stop is not None:
        try:
            await worker.on_stop(runtime)
        except Exception as exc:
            _log_error(worker, exc, stopping=True)


def _idle_interval(worker: Worker) -> float:
    if worker.name in _SOON:
        _SOON.discard(worker.name)
        return min(worker.interval_s, SOON_S)
    return worker.interval_s


def _log_error(worker: Worker, exc: BaseException, **fields: Any) -> None:
    _log.error("worker_error", worker=worker.name, exc_info=exc, **fields)


async def _sleep(stop: asyncio.Event, seconds: float, woken: asyncio.Event | None = None) -> None:
    """Sleep `seconds`, or less if `stop` (or `woken`) is set meanwhile."""
    if seconds <= 0 or (woken is not None and woken.is_set()):
        await asyncio.sleep(0)
        return
    if woken is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=seconds)
        return
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(woken.wait())]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
