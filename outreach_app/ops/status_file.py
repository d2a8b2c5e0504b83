"""The status `outreach worker` reports to the `outreach serve` that started it (self-hosting kit).

The child writes its workers' records (`workers.health.BEATS`) and its send counts to a JSON file every
`WRITE_EVERY_S` (written whole to a temporary name, then renamed: a reader never sees half a file); the
server reads it for `/readyz` and `/metrics`, so its answers cover the workers it runs in the child. The
path reaches the child in `OUTREACH_WORKER_STATUS_FILE`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workers.health import BEATS, sends_by_outcome

STATUS_ENV = "OUTREACH_WORKER_STATUS_FILE"
RESTARTS_ENV = "OUTREACH_WORKER_RESTARTS"
"""How many times the server started this child again after it died (reported back in the status)."""
WRITE_EVERY_S = 1.0
STALE_AFTER_S = 5.0
"""A report older than this means the worker process is not running (or not running its loop)."""


@dataclass(frozen=True)
class ChildStatus:
    """What the server knows of its worker process: its last report, or why there is none. `up`: the
    report is there and fresh; `restarts`: how many times the server had started the reporting child again
    after it died."""

    workers: list[dict[str, Any]]
    sends: dict[str, int]
    problem: str | None
    child: str = ""
    up: bool = False
    restarts: int = 0


def write_status(path: Path, expected: list[str]) -> None:
    """Write this process's worker records and send counts to `path` (atomically); `expected` names the
    workers it runs (a worker not started yet is then missing, not absent)."""
    data = {
        "pid": os.getpid(),
        "expected": expected,
        "written_at": time.time(),
        "workers": BEATS.snapshot(),
        "sends": sends_by_outcome(),
        "restarts": int(os.environ.get(RESTARTS_ENV) or 0),
    }
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data))
    os.replace(temporary, path)


async def report_status(path: Path, stop: asyncio.Event, expected: list[str]) -> None:
    """In the child: write the status every `WRITE_EVERY_S` until `stop` is set, then remove the file."""
    try:
        while not stop.is_set():
            await asyncio.to_thread(write_status, path, expected)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), WRITE_EVERY_S)
    finally:
        await asyncio.to_thread(path.unlink, missing_ok=True)


def read_status(path: Path, now: float | None = None) -> ChildStatus:
    """In the server: the child's last report; `problem` says when it is missing or stale, naming the child
    by its file's name (`outreach_app/worker_process.py`: `import.json`, `others.json`)."""
    now = time.time() if now is None else now
    name = path.stem
    child = f"worker process {name}"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return ChildStatus([], {}, f"{child}: no status reported yet (starting or restarting)", name)
    except (OSError, ValueError) as exc:
        return ChildStatus([], {}, f"{child}: unreadable status ({exc})", name)
    age = now - float(data.get("written_at", 0))
    workers = list(data.get("workers", []))
    sends = {str(k): int(v) for k, v in dict(data.get("sends", {})).items()}
    restarts = int(data.get("restarts", 0))
    if age > STALE_AFTER_S:
        return ChildStatus(workers, sends, f"{child}: last status {age:.0f} s ago", name, False, restarts)
    missing = sorted(set(data.get("expected", [])) - {str(w["name"]) for w in workers})
    if missing:
        problem = f"{child}: not started yet: {', '.join(missing)}"
        return ChildStatus(workers, sends, problem, name, True, restarts)
    return ChildStatus(workers, sends, None, name, True, restarts)
