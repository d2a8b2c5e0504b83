"""`outreach serve`'s workers in two child processes, started, restarted and stopped by the server.

Requests and the workers (the import merge above all) then run on different cores: one Python process runs
one thread at a time, and a merge, enrichment and the chunks' requests sharing it made each other wait
(issue 31). Each child is `outreach worker --only ...` with the server's settings, its public URL included:

- `import`: the `import` worker alone, so that the merge has a core to itself;
- `others`: every other worker but `usage`, which flushes what the server's own requests recorded and
  stays in the server.

What crosses between the two goes through the database: the mail domains the merge notes for enrichment
(`domain_lookups_wanted`), and the end of storing, which the `others` child's `enrich` worker notices by
polling every quarter second while an import is being stored (`workers.imports.after_storing`).
`serve_children` builds the `WorkerGroup` that supervises them, each a `WorkerProcess` (one code path for
both):

- Started once the server answers (the processes do not start up on the same cores at once); an exit
  the server did not ask for is logged and the child started
  again after a back-off (1 s doubling to 30 s; reset once a child has run for a minute).
- Stopped with SIGTERM the moment the server is asked to stop (its requests and the child's ticks finish at
  the same time; a merge part commits or rolls back as a whole), and a child still running `STOP_GRACE_S`
  later is killed, so the server is gone within 10 s.
- The child watches its parent: if the server dies without stopping it (SIGKILL), the child stops itself
  within a second (`OUTREACH_PARENT_PID`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import structlog

from outreach_app.ops.status_file import RESTARTS_ENV, STATUS_ENV
from outreach_core.kernel.settings import Settings

STOP_GRACE_S = 8.0
"""How long a stopping child may finish its running ticks before it is killed."""
RESTART_MIN_S = 1.0
RESTART_MAX_S = 30.0
STEADY_S = 60.0
"""A child that ran this long resets the restart back-off."""
PARENT_ENV = "OUTREACH_PARENT_PID"

_log = structlog.get_logger("outreach.workers")


IMPORT_CHILD = "import"
OTHERS_CHILD = "others"


class WorkerProcess:
    """One supervised child, running the workers named in `only` (every worker but `usage` when None);
    `start()` once, `stop()` once. `name` tells it apart in logs, `/readyz` and its status file."""

    def __init__(self, settings: Settings, *, only: list[str] | None = None, name: str = "workers") -> None:
        self.settings = settings
        self.only = only
        self.name = name
        self.process: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._stop_sent_at: float | None = None
        self._signalled: asyncio.subprocess.Process | None = None
        # what the child reports for the server's /readyz and /metrics (outreach_app/ops/status_file.py)
        self._status_dir = Path(tempfile.mkdtemp(prefix=f"outreach-{name}-"))
        self.status_file = self._status_dir / f"{name}.json"

    def command(self) -> list[str]:
        names = self.only or _default_names()
        return [sys.executable, "-m", "outreach_app.cli", "worker", "--only", ",".join(names)]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["OUTREACH_DATABASE_URL"] = self.settings.database_url
        env["OUTREACH_PUBLIC_URL"] = self.settings.public_url
        env[PARENT_ENV] = str(os.getpid())
        env[STATUS_ENV] = str(self.status_file)
        env[RESTARTS_ENV] = str(self.restarts)
        return env

    async def start(self) -> None:
        await self._spawn()
        self._task = asyncio.create_task(self._watch(), name=f"worker-process:{self.name}")

    def begin_stop(self) -> None:
        """SIGTERM now (the server was asked to stop): the child finishes its ticks while the server
        finishes its requests, instead of after them. Safe to call from a signal handler, and more than
        once."""
        if self._stop_sent_at is not None:
            return
        self._stop_sent_at = time.monotonic()
        self._stopping.set()
        self._terminate()

    def _terminate(self) -> None:
        process = self.process
        if process is not None and process.returncode is None and self._signalled is not process:
            self._signalled = process
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)

    async def stop(self) -> None:
        """SIGTERM (unless `begin_stop` sent it), then SIGKILL `STOP_GRACE_S` after it; returns once the
        child is gone."""
        self.begin_stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            await self._wait_stopped()
        finally:
            shutil.rmtree(self._status_dir, ignore_errors=True)

    async def _wait_stopped(self) -> None:
        process = self.process
        if process is None or process.returncode is not None:
            return
        self._terminate()  # a child started after `begin_stop`
        assert self._stop_sent_at is not None
        grace = max(0.0, STOP_GRACE_S - (time.monotonic() - self._stop_sent_at))
        try:
            await asyncio.wait_for(process.wait(), grace)
        except TimeoutError:
            _log.warning("worker_process_killed", child=self.name, pid=process.pid, after_s=STOP_GRACE_S)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        _log.info("worker_process_stopped", child=self.name, pid=process.pid, returncode=process.returncode)

    async def _spawn(self) -> None:
        # a session of its own: a Ctrl-C at the terminal reaches the server, which then stops the child,
        # instead of both at once (the server would see the child's exit as a crash and start another)
        self.process = await asyncio.create_subprocess_exec(
            *self.command(), env=self.environment(), stdin=asyncio.subprocess.DEVNULL, start_new_session=True
        )
        _log.info("worker_process_started", child=self.name, pid=self.process.pid)

    async def _watch(self) -> None:
        delay = RESTART_MIN_S
        while not self._stopping.is_set():
            assert self.process is not None
            started = time.monotonic()
            code = await self.process.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= STEADY_S:
                delay = RESTART_MIN_S
            _log.error(
                "worker_process_exited",
                child=self.name,
                pid=self.process.pid,
                returncode=code,
                restart_in_s=delay,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), delay)
            if self._stopping.is_set():
                return
            delay = min(delay * 2, RESTART_MAX_S)
            self.restarts += 1
            await self._spawn()


def _default_names() -> list[str]:
    from workers.registry import ALL_WORKERS

    return [name for name in ALL_WORKERS if name != "usage"]


class WorkerGroup:
    """The children `outreach serve` runs (`serve_children`), started, stopped and reported on together."""

    def __init__(self, children: list[WorkerProcess]) -> None:
        self.children = children

    @property
    def status_files(self) -> list[Path]:
        return [child.status_file for child in self.children]

    async def start(self) -> None:
        for child in self.children:
            await child.start()

    def begin_stop(self) -> None:
        """SIGTERM to every child at once (see `WorkerProcess.begin_stop`)."""
        for child in self.children:
            child.begin_stop()

    async def stop(self) -> None:
        """Every child stopped, side by side: the group is gone within one `STOP_GRACE_S`."""
        self.begin_stop()
        await asyncio.gather(*(child.stop() for child in self.children))


def serve_children(settings: Settings) -> WorkerGroup:
    """`outreach serve`'s two children: the `import` worker alone, and every other worker but `usage`."""
    others = [name for name in _default_names() if name != IMPORT_CHILD]
    return WorkerGroup(
        [
            WorkerProcess(settings, only=[IMPORT_CHILD], name=IMPORT_CHILD),
            WorkerProcess(settings, only=others, name=OTHERS_CHILD),
        ]
    )


async def watch_parent(stop: asyncio.Event) -> None:
    """In the child: set `stop` once the server that started it (`OUTREACH_PARENT_PID`) is gone."""
    expected = os.environ.get(PARENT_ENV)
    if not expected:
        return
    while not stop.is_set():
        if os.getppid() != int(expected):
            _log.warning("worker_parent_gone", parent=expected)
            stop.set()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
