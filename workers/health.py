"""What this process's workers did, for `/readyz` and `/metrics` (self-hosting kit, issue 30).

`run_workers` reports every tick here (`BEATS`): when each worker was started, when its last tick began and
ended, how many ticks, failures and items. The sender reports its outcomes (`record_sends`). Plain numbers
in memory, cheap to update on every tick; `outreach_app/ops` turns them into readiness and Prometheus text,
and `outreach worker` started by `outreach serve` writes them to a file its parent reads
(`outreach_app/ops/status_file.py`).

A worker is healthy (`worker_problems`) when it ended a successful tick within three of its intervals (at
least `MIN_WINDOW_S`; counted from its start before the first tick), or is inside a tick that began less
than `STUCK_AFTER_S` ago (a long import merge or SMTP batch is work, not a stall).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "BEATS",
    "MIN_WINDOW_S",
    "STUCK_AFTER_S",
    "Beat",
    "Beats",
    "record_sends",
    "sends_by_outcome",
    "worker_problems",
]

MIN_WINDOW_S = 5.0
"""The shortest silence that makes a worker unhealthy (three intervals of a 0.25 s poller are too short to
tell a busy event loop from a dead worker)."""
STUCK_AFTER_S = 900.0
"""A tick running longer than this (and longer than three intervals) counts as stuck."""


@dataclass
class Beat:
    """One worker's record in this process. Times are wall-clock seconds (`time.time()`), so another
    process can read them."""

    name: str
    interval_s: float
    started_at: float
    tick_started_at: float | None = None
    """The running tick's start; None between ticks."""
    last_ok_at: float | None = None
    """When the last successful tick ended."""
    ticks: int = 0
    failures: int = 0
    items: int = 0
    last_error: str | None = None
    stopped: bool = False


@dataclass
class Beats:
    """Every worker's `Beat` in this process, by name."""

    clock: Callable[[], float] = time.time
    beats: dict[str, Beat] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def started(self, name: str, interval_s: float) -> None:
        with self._lock:
            self.beats[name] = Beat(name, interval_s, self.clock())

    def tick_started(self, name: str) -> None:
        beat = self.beats.get(name)
        if beat is not None:
            beat.tick_started_at = self.clock()

    def tick_ended(self, name: str, handled: int) -> None:
        beat = self.beats.get(name)
        if beat is not None:
            beat.tick_started_at = None
            beat.last_ok_at = self.clock()
            beat.ticks += 1
            beat.items += max(handled, 0)
            beat.last_error = None

    def tick_failed(self, name: str, error: BaseException) -> None:
        beat = self.beats.get(name)
        if beat is not None:
            beat.tick_started_at = None
            beat.ticks += 1
            beat.failures += 1
            beat.last_error = f"{type(error).__name__}: {error}"[:300]

    def stopped(self, name: str) -> None:
        beat = self.beats.get(name)
        if beat is not None:
            beat.stopped = True
            beat.tick_started_at = None

    def forget(self) -> None:
        """Drop every record (tests)."""
        with self._lock:
            self.beats.clear()

    def snapshot(self) -> list[dict[str, Any]]:
        """Every running worker's record as plain data (stopped workers are left out)."""
        with self._lock:
            return [asdict(b) for b in self.beats.values() if not b.stopped]


BEATS = Beats()
"""This process's workers."""

_sends: dict[str, int] = {}
_sends_lock = threading.Lock()


def record_sends(counts: Mapping[str, int]) -> None:
    """Add one sender batch's outcomes (`sent`, `bounced`, `failed`, ...) to this process's totals."""
    with _sends_lock:
        for outcome, count in counts.items():
            _sends[outcome] = _sends.get(outcome, 0) + int(count)


def sends_by_outcome() -> dict[str, int]:
    """Emails handed off by this process's sender, by outcome, since it started."""
    with _sends_lock:
        return dict(_sends)


def worker_problems(beats: list[dict[str, Any]], now: float) -> list[str]:
    """Why the workers in `beats` (`Beats.snapshot()` records) are not healthy at `now`; empty when they
    all are."""
    problems = []
    for beat in beats:
        window = max(3 * float(beat["interval_s"]), MIN_WINDOW_S)
        running_since = beat.get("tick_started_at")
        if running_since is not None:
            if now - running_since <= max(window, STUCK_AFTER_S):
                continue
            problems.append(f"worker {beat['name']}: one tick has run for {now - running_since:.1f} s")
            continue
        since = beat.get("last_ok_at") or beat["started_at"]
        if now - since <= window:
            continue
        what = "no successful tick" if beat.get("last_ok_at") else "no tick yet"
        reason = f"worker {beat['name']}: {what} for {now - since:.1f} s (limit {window:g} s)"
        if beat.get("last_error"):
            reason += f"; last error: {beat['last_error']}"
        problems.append(reason)
    return problems
