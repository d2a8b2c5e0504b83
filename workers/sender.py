"""The sender worker: plans a batch, hands each email to its mailbox's SMTP server, records the outcomes.

One tick = one scheduling pass (`plan_batch`, one transaction that writes the batch to the ledger as
`sending`), the SMTP hand-offs with no transaction open (up to `sender_concurrency` at once), then one
transaction recording every outcome (`resolve_batch`). Several processes can run it against PostgreSQL
(rows are claimed with `FOR UPDATE SKIP LOCKED`); on SQLite run one.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from outreach_core.sending.handoff import Handoff, Job, deliver
from outreach_core.sending.outcomes import resolve_batch
from outreach_core.sending.planner import plan_batch
from outreach_core.sending.recovery import recover_lost_sends
from workers.health import record_sends

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

_log = structlog.get_logger()
_RESOLVE_ATTEMPTS = 3
_started: set[int] = set()  # runtimes whose start-up recovery ran (by id)


async def tick(runtime: Runtime) -> int:
    """One batch; returns how many emails were handed off plus how many leads, mailboxes and campaigns the
    pass changed otherwise (so the loop runs again at once while there is work)."""
    smtp = runtime.ports.smtp
    if smtp is None:
        raise RuntimeError("the sender needs an SMTP adapter (ports.smtp)")
    if id(runtime) not in _started:
        # SQLite runs one sender, so a `sending` row at start-up is a hand-off lost in a crash. With
        # PostgreSQL another worker may be in the middle of it: only the age rule applies there.
        lost = await runtime.system(recover_lost_sends, everything=runtime.is_sqlite)
        if lost:
            _log.warning("sender_recovered_lost_sends", count=lost)
        _started.add(id(runtime))
    batch = await runtime.system(plan_batch)
    if batch.jobs:
        limit = asyncio.Semaphore(runtime.settings.sender_concurrency)

        async def one(job: Job) -> Handoff:
            async with limit:
                delivery = await deliver(
                    job, smtp, runtime.settings, runtime.ports.clock.now(), oauth=runtime.ports.oauth
                )
                return Handoff(job, delivery, runtime.ports.clock.now())

        results = await asyncio.gather(*(one(job) for job in batch.jobs))
        await _resolve(runtime, results)
    await smtp.close_idle()
    return len(batch.jobs) + batch.changed


async def _resolve(runtime: Runtime, results: list[Handoff]) -> None:
    """Record the outcomes; a database hiccup is retried, after which the rows stay `sending` and become
    `unknown` (never repeated) when they are old enough."""
    for attempt in range(1, _RESOLVE_ATTEMPTS + 1):
        try:
            counts = await runtime.system(resolve_batch, results)
            _log.info("sender_batch", **counts)
            record_sends(counts)
            return
        except Exception:
            if attempt == _RESOLVE_ATTEMPTS:
                raise
            await asyncio.sleep(0.5 * attempt)
