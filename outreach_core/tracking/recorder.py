"""Tracking hits committed in batches: journaled, or with each request waiting for its own hit's commit.

With a journal (`journal.py`), a request's hit is appended to this process's journal file and the request
answers at once. Without one, the request waits until the batch holding its hit is committed, at most
`wait_s`, then answers (group commit). One flusher task writes whatever has queued, in one transaction:
it waits `gather_s` after the first hit (so the hits arriving meanwhile share the transaction: a
transaction costs about as much CPU as 30 hits), writes them all, and starts over. At 1,000 requests/s
and 10 ms, about 15 hits a transaction.

What a crash can lose: with a journal, nothing that was answered, if the process dies (the machine losing
power can lose what the operating system had not written to disk); the next start replays the journals of
dead processes (`replay`). Without one, a hit is answered only after its commit, unless that commit took
longer than `wait_s` (the database slow, locked or down); only such hits, answered and still queued, are
lost if the process dies then (on PostgreSQL that commit is not flushed to disk: `record.record_hits`, so
a crash of PostgreSQL itself can lose its last few hundred milliseconds). A batch whose write fails is
queued again (at most `max_queued` hits are kept; past that the oldest are dropped and counted in
`dropped`). Stopping the server (`close`) writes what is queued; what it cannot write stays in the journal
for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Awaitable, Callable, Sequence

import structlog

from outreach_core.kernel.ids import new_id
from outreach_core.tracking.journal import Journal, Segment, orphans, read
from outreach_core.tracking.rules import Hit

_log = structlog.get_logger("outreach.tracking")
_RETRY_AFTER_S = 0.5
MAX_BATCH = 5_000

Flush = Callable[[Sequence[Hit], bool], Awaitable[object]]
"""Writes a batch in one transaction; the flag says it was read back from a dead process's journal."""


class HitRecorder:
    """The queue of hits not yet committed, and the task that commits them."""

    def __init__(
        self,
        flush: Flush,
        *,
        wait_s: float,
        max_queued: int,
        gather_s: float = 0.0,
        journal: Journal | None = None,
    ) -> None:
        self._flush = flush
        self.journal = journal
        self._segments: list[Segment] = []  # rotated journal segments whose hits are not committed yet
        self._wait_s = wait_s
        self._gather_s = gather_s
        self._max_queued = max_queued
        self._queue: list[Hit] = []
        # what the requests of the hits queued since the last batch was taken wait for: True once committed,
        # False when `wait_s` passed first or the write failed (one future per batch, not per hit)
        self._waiter: asyncio.Future[bool] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._in_flight = 0
        self.recorded = 0
        self.dropped = 0
        self.failures = 0

    @property
    def queued(self) -> int:
        return len(self._queue)

    async def record(self, hit: Hit) -> bool:
        """Queue `hit`; with a journal, append it there and return True at once; without, wait (at most
        `wait_s`) for its commit and return whether it was committed in time."""
        journaled = False
        if self.journal is not None:
            hit = hit if hit.id else dataclasses.replace(hit, id=new_id("trk"))
            try:
                self.journal.append(hit)
                journaled = True
            except OSError:  # disk full, directory gone: wait for the commit instead
                _log.exception("tracking_journal_failed")
        self._queue.append(hit)
        if len(self._queue) > self._max_queued:  # the database has been unreachable for a while
            excess = len(self._queue) - self._max_queued
            del self._queue[:excess]  # their requests have been answered long ago
            self.dropped += excess
        self._start()
        self._wake.set()
        if journaled:
            return True
        if self._wait_s <= 0:
            return False
        if self._waiter is None:
            loop = asyncio.get_running_loop()
            self._waiter = loop.create_future()
            self._timer = loop.call_later(self._wait_s, _settle, self._waiter, False)
        return await asyncio.shield(self._waiter)

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="tracking-recorder")

    async def _run(self) -> None:
        while True:
            if not self._queue:
                if self._closed:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            if self._gather_s > 0 and len(self._queue) < MAX_BATCH and not self._closed:
                await asyncio.sleep(self._gather_s)  # let the hits arriving meanwhile share the transaction
            if not await self._flush_once():
                if self._closed:
                    return  # `close` tries again itself
                await asyncio.sleep(_RETRY_AFTER_S)

    async def _flush_once(self) -> bool:
        if self.journal is not None:  # the whole queue: exactly the hits of the segments rotated so far
            batch, self._queue = self._queue, []
            self._segments.append(self.journal.rotate())
        else:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
        waiter, timer = (self._waiter, self._timer) if not self._queue else (None, None)
        if waiter is not None:  # hits arriving from now on wait for the next batch
            self._waiter = self._timer = None
        self._in_flight = len(batch)
        try:
            for part in range(0, len(batch), MAX_BATCH):
                await self._flush(batch[part : part + MAX_BATCH], False)
        except Exception:
            self._in_flight = 0
            self.failures += 1
            _log.exception("tracking_flush_failed", hits=len(batch))
            self._queue[:0] = batch  # the oldest first again; trimmed to max_queued on the next record
            if waiter is not None:
                _settle(waiter, False)  # answer now; the hits stay queued
            return False
        finally:
            if timer is not None:
                timer.cancel()
        self._in_flight = 0
        self.recorded += len(batch)
        for segment in self._segments:
            Journal.discard(segment)
        self._segments.clear()
        if waiter is not None:
            _settle(waiter, True)
        return True

    async def replay(self) -> int:
        """Record the hits left in the journals of processes that died (call once at start); returns how
        many were recorded now. A journal that cannot be written now stays for the next start."""
        if self.journal is None:
            return 0
        replayed = 0
        for segment in orphans(self.journal.directory):
            hits = read(segment)
            try:
                for part in range(0, len(hits), MAX_BATCH):
                    await self._flush(hits[part : part + MAX_BATCH], True)
            except Exception:
                _log.exception("tracking_replay_failed", journal=str(segment.path), hits=len(hits))
                os.close(segment.fd)
                continue
            Journal.discard(segment)
            replayed += len(hits)
        if replayed:
            _log.info("tracking_journal_replayed", hits=replayed)
        return replayed

    async def drain(self, timeout_s: float = 10.0) -> bool:
        """Wait until every hit queued so far is committed (tests, benchmarks); False on timeout."""
        loop = asyncio.get_running_loop()
        until = loop.time() + timeout_s
        while self._queue or self._in_flight:
            if loop.time() > until:
                return False
            await asyncio.sleep(0.005)
        return True

    async def close(self) -> None:
        """Write what is queued (retrying a failing write a few times), then stop the flusher."""
        self._closed = True
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        for _ in range(3):
            if not self._queue:
                break
            await self._flush_once()
        if self._queue:
            _log.error(
                "tracking_hits_not_written_at_stop", hits=len(self._queue), journaled=bool(self.journal)
            )
            if self.journal is not None:  # kept for the next start
                for segment in [*self._segments, self.journal.current]:
                    os.close(segment.fd)
        elif self.journal is not None:
            self.journal.close()


def _settle(waiter: asyncio.Future[bool], committed: bool) -> None:
    if not waiter.done():
        waiter.set_result(committed)
