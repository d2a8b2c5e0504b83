"""The `webhooks` worker: fans outbox events out to endpoints and POSTs them, signed, at least once.

Each tick runs one cycle of `outreach_core.webhooks.delivery.run_cycle` (one transaction: record the
attempts that finished, fan out new events, claim due deliveries for endpoints with free slots), then starts
a task per claimed delivery. The tasks POST with no transaction open and leave their results for the next
cycle, so one slow endpoint never holds up the others:

- per endpoint, at most `OUTREACH_WEBHOOK_CONCURRENCY_PER_ENDPOINT` POSTs run at once (a semaphore), and
  at most twice that many deliveries are held (claimed and not yet recorded);
- while POSTs are in flight, a tick waits for the first to finish (or a quarter second, for new events)
  before its cycle, so results are recorded in batches and fast endpoints are served at once;
- stopping (SIGTERM) waits for the POSTs in flight (at most the timeout) and records them; a SIGKILL leaves
  them claimed until their lease ends, and they are POSTed again.

State held between ticks lives in one `Pipeline` per runtime (a process runs one runtime). Tests call
`tick` and then `drain` (wait for the POSTs and record them).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import weakref
from collections import Counter
from typing import TYPE_CHECKING

import structlog

from outreach_core.webhooks import rules
from outreach_core.webhooks.delivery import (
    PURGE_BATCH,
    Attempt,
    Claimed,
    anything_to_do,
    purge_old,
    run_cycle,
)

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

POLL_S = 0.25
"""How often an idle worker looks for new events and due retries."""
FULL_PROBE_S = 1.0
"""How often every enabled endpoint is probed for due deliveries (retries coming due, redeliveries, work
fanned out by another process); in between only endpoints known to have work are."""
PURGE_EVERY_S = 60.0
GATHER, GATHER_S = 50, 0.01
"""While POSTs are in flight, a cycle waits up to 10 ms for at least 50 results, so that it records many in
one transaction (a few statements each) instead of a few."""
_log = structlog.get_logger()


class Pipeline:
    """The in-flight POSTs of one process and the results waiting to be recorded."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.concurrency = runtime.settings.webhook_concurrency_per_endpoint
        self.timeout_s = runtime.settings.webhook_timeout_s
        self.outstanding: Counter[str] = Counter()  # endpoint -> deliveries held (claimed, unrecorded)
        self.durations: dict[str, float] = {}  # endpoint -> moving average of its POSTs' duration (s)
        self.busy = False  # the last cycle did something: the next one need not ask first
        self.skipped = 0
        self.limits: dict[str, asyncio.Semaphore] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.results: list[Attempt] = []
        self.finished = asyncio.Event()
        self.hot: set[str] = set()  # endpoints to probe in the next cycle
        self.next_full_probe = 0.0
        self.full_probe_s = FULL_PROBE_S
        self.next_purge = 0.0
        self.rng = random.Random()

    async def tick(self) -> int:
        if self.tasks and not self.results:
            self.finished.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.finished.wait(), POLL_S)
        if self.tasks and len(self.results) < GATHER:
            await asyncio.sleep(GATHER_S)  # let more POSTs finish: one transaction records them all
        handled = await self.cycle()
        await self.purge()
        # while POSTs are in flight the loop must come back at once: this tick waits for them itself
        return handled + (1 if self.tasks else 0)

    def cap(self, webhook_id: str) -> int:
        """How many deliveries of an endpoint this process may hold (`rules.held_cap`)."""
        return rules.held_cap(self.concurrency, self.timeout_s, self.durations.get(webhook_id))

    async def cycle(self, *, claim: bool = True) -> int:
        results, self.results = self.results, []
        if not results and not self.busy and not await self.runtime.system_read(anything_to_do):
            return 0
        now = time.monotonic()
        full = now >= self.next_full_probe
        if full:
            self.next_full_probe = now + self.full_probe_s
        probe = None if full else self.hot | {a.claimed.webhook_id for a in results}
        try:
            outcome = await self.runtime.system(
                run_cycle,
                results,
                outstanding=dict(self.outstanding),
                caps={w: self.cap(w) for w in self.durations},
                default_cap=rules.held_cap(self.concurrency, self.timeout_s, None),
                probe=probe,
                claim=claim,
                rng=self.rng,
            )
        except BaseException:
            self.results = results + self.results  # recorded by a later cycle (or POSTed again)
            raise
        for a in results:
            self._release(a.claimed.webhook_id)
        self.hot = outcome.full
        claimed_at = time.monotonic()
        for claimed in outcome.claimed:
            self._start(claimed, claimed_at)
        handled = outcome.recorded + outcome.events + len(outcome.claimed)
        self.busy = handled > 0
        return handled

    async def purge(self) -> None:
        if time.monotonic() < self.next_purge:
            return
        self.next_purge = time.monotonic() + PURGE_EVERY_S
        # one short transaction per batch, so other writers get the (SQLite) lock in between
        while await self.runtime.system(purge_old) >= PURGE_BATCH:
            continue

    async def drain(self, timeout_s: float | None = None) -> int:
        """Wait for every POST in flight (at most `timeout_s`, default the request timeout plus a second),
        cancel what is left, and record the results. Returns how many were recorded."""
        limit = self.runtime.settings.webhook_timeout_s + 1 if timeout_s is None else timeout_s
        if self.tasks:
            _, late = await asyncio.wait(set(self.tasks), timeout=limit)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        if not self.results:
            return 0
        return await self.cycle(claim=False)

    def _start(self, claimed: Claimed, claimed_at: float) -> None:
        self.outstanding[claimed.webhook_id] += 1
        task = asyncio.create_task(self._post(claimed, claimed_at), name=f"webhook:{claimed.delivery_id}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _release(self, webhook_id: str) -> None:
        self.outstanding[webhook_id] -= 1
        if self.outstanding[webhook_id] <= 0:
            del self.outstanding[webhook_id]
            self.limits.pop(webhook_id, None)
            if len(self.durations) > 10_000:  # endpoints long gone: start over rather than grow
                self.durations.clear()

    async def _post(self, claimed: Claimed, claimed_at: float) -> None:
        limit = self.limits.setdefault(claimed.webhook_id, asyncio.Semaphore(self.concurrency))
        async with limit:
            started = time.monotonic()
            if rules.waited_too_long(started - claimed_at, self.timeout_s):
                self.skipped += 1
                self._release(claimed.webhook_id)
                return
            at = self.runtime.ports.clock.now()
            status, answer = await self._send(claimed, int(at.timestamp()))
            elapsed = time.monotonic() - started
        average = self.durations.get(claimed.webhook_id)
        self.durations[claimed.webhook_id] = elapsed if average is None else 0.8 * average + 0.2 * elapsed
        ms = round(elapsed * 1000)
        self.results.append(Attempt(claimed, at, status, ms, rules.attempt_error(status, answer)))
        self.finished.set()

    async def _send(self, claimed: Claimed, timestamp: int) -> tuple[int, bytes]:
        http = self.runtime.ports.http
        if http is None:
            return 0, b"no HTTP client is configured on this server"
        if not claimed.secrets:
            return 0, b"not sent: the signing secret cannot be decrypted with the server's keys; rotate it"
        headers = rules.delivery_headers(
            claimed.event_id, claimed.type, timestamp, claimed.body, list(claimed.secrets)
        )
        try:
            return await http.post_json(
                claimed.url,
                claimed.body,
                headers,
                self.runtime.settings.webhook_timeout_s,
                max_bytes=rules.MAX_RESPONSE_BYTES,
            )
        except asyncio.CancelledError:
            return 0, b"not finished: the worker stopped"
        except Exception as exc:  # the adapter promises (status, body); anything else is still an attempt
            _log.error("webhook_post_error", delivery=claimed.delivery_id, exc_info=exc)
            return 0, f"internal error ({type(exc).__name__})".encode()


_pipelines: weakref.WeakKeyDictionary[Runtime, Pipeline] = weakref.WeakKeyDictionary()


def pipeline(runtime: Runtime) -> Pipeline:
    found = _pipelines.get(runtime)
    if found is None:
        found = _pipelines[runtime] = Pipeline(runtime)
    return found


async def tick(runtime: Runtime) -> int:
    """One cycle: record finished POSTs, fan out new events, claim and start due deliveries."""
    return await pipeline(runtime).tick()


async def drain(runtime: Runtime, timeout_s: float | None = None) -> int:
    """Wait for the POSTs in flight and record them (tests; the worker's stop)."""
    return await pipeline(runtime).drain(timeout_s)


async def stop(runtime: Runtime) -> None:
    """When the worker stops: let the POSTs in flight finish (bounded by the timeout) and record them."""
    await drain(runtime)
