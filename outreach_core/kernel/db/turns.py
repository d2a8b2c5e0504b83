"""SQLite: write transactions of several processes on one database file take turns.

`outreach serve` runs its workers in a child process (issue 31), so the server's requests and the import
merge write the same SQLite file from two processes. SQLite's own wait for its write lock is a poll with
growing sleeps (up to 100 ms) that lets newcomers in first: a process writing back to back (the merge,
part after part) would take the lock again before a waiting request's next poll, for as long as the import
lasts. Within a process the runtime queues write transactions (`Runtime._writer`); across processes they
meet here, before `BEGIN IMMEDIATE`:

- `<database>-turn`, the turn itself: an exclusive `flock`, held from before `BEGIN IMMEDIATE` to after the
  commit. A process blocked on it is woken by the kernel the moment it is released, instead of polling.
- `<database>-waiting`: a process blocked on the turn holds a shared `flock` on it. A process that wants the
  turn first checks that nobody is waiting (it can take an exclusive lock on this file for an instant); while
  somebody is, it lets them go first (re-checking every millisecond). Two processes that both keep writing
  therefore alternate, one transaction each, and neither waits longer than the other's one transaction.

The locks are `flock` locks on files beside the database, so they are released by the kernel when a process
dies (a `kill -9` of the worker process leaves no stale turn). Linux and other POSIX systems only; elsewhere
(no `fcntl`) there is no turn and SQLite's busy timeout applies as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

POLITE_WAIT_S = 0.001
"""How often a process that lets a waiting one go first looks again."""


class WriteTurns:
    """The turn of one database file, for one process (one instance per engine)."""

    def __init__(self, database: Path) -> None:
        self.turn_path = Path(f"{database}-turn")
        self.waiting_path = Path(f"{database}-waiting")
        self._turn: int | None = None
        self._waiting: int | None = None  # held shared while this process is blocked on the turn
        self._check: int | None = None  # tried exclusive to see whether another process is waiting

    @classmethod
    def available(cls) -> bool:
        return fcntl is not None

    def _open(self) -> tuple[int, int, int]:
        if self._turn is None or self._waiting is None or self._check is None:
            self._turn = os.open(self.turn_path, os.O_RDWR | os.O_CREAT, 0o600)
            self._waiting = os.open(self.waiting_path, os.O_RDWR | os.O_CREAT, 0o600)
            self._check = os.open(self.waiting_path, os.O_RDWR | os.O_CREAT, 0o600)
        return self._turn, self._waiting, self._check

    async def acquire(self) -> None:
        """Take the turn: after any process already waiting for it, then as soon as it is free."""
        turn, waiting, check = self._open()
        # somebody is waiting: they go first (another process's lock: no event to wait on)
        while not _try(check, fcntl.LOCK_EX):  # noqa: ASYNC110
            await asyncio.sleep(POLITE_WAIT_S)
        fcntl.flock(check, fcntl.LOCK_UN)
        if _try(turn, fcntl.LOCK_EX):
            return
        while not _try(waiting, fcntl.LOCK_SH):  # noqa: ASYNC110 - a checker holds it for an instant
            await asyncio.sleep(0)
        blocked = asyncio.ensure_future(asyncio.to_thread(fcntl.flock, turn, fcntl.LOCK_EX))
        try:
            await asyncio.shield(blocked)
        except asyncio.CancelledError:
            # the thread will still get the turn: give it back as soon as it does
            blocked.add_done_callback(lambda _: self._after_cancelled())
            raise
        fcntl.flock(waiting, fcntl.LOCK_UN)

    def _after_cancelled(self) -> None:
        assert self._turn is not None and self._waiting is not None
        fcntl.flock(self._waiting, fcntl.LOCK_UN)
        fcntl.flock(self._turn, fcntl.LOCK_UN)

    def release(self) -> None:
        if self._turn is not None:
            fcntl.flock(self._turn, fcntl.LOCK_UN)

    def close(self) -> None:
        for fd in (self._turn, self._waiting, self._check):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._turn = self._waiting = self._check = None


def _try(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
