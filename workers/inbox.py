"""The `inbox` worker: one asyncio task per mailbox this process holds, reading its INBOX and junk folder.

Each tick (every few seconds; at once after a tick that started tasks, so a restarted process takes all its
mailboxes within a second or two) renews this process's leases and takes free mailboxes
(`outreach_core.inbox.leases.hold`), starts a task for each new one, and stops the tasks of mailboxes it no
longer holds (paused, quarantined, deleted, taken over) or whose settings changed (they start again). A task:

1. connects and logs in (`ports.inbox`); a failure sets `syncError` (three refused logins in a row make the
   mailbox `error`) and the task tries again after a bounded exponential back-off with jitter;
2. finds INBOX and the junk folder, syncs both from their checkpoints (junk first, so INBOX stays open);
3. waits for new mail: IDLE on INBOX for at most `OUTREACH_INBOX_POLL_S` (then the junk folder is looked at
   and IDLE starts again, which also renews it long before the 29 minutes of RFC 2177), or, when `inboxPoll`
   is on or the server has no IDLE, a sleep of `OUTREACH_INBOX_POLL_S`; then back to 2.

Every transaction of a task waits for one of `DB_SLOTS` (many tasks syncing at once never time out waiting
for the database pool). A lost connection or a timeout ends the session (`syncError` set) and the task
reconnects after the back-off; the next sync starts from the checkpoints, so nothing is missed or read
twice. If this process cannot renew its leases for most of a lease's span, it stops its tasks itself before
another process may take them over.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import time
import weakref
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from outreach_core.inbox.leases import InboxMailbox, hold, release
from outreach_core.inbox.pipeline import FolderBatch, IngestBatch, LeaseLost, ingest_batch
from outreach_core.inbox.sync import (
    SYNCED_MARK_S,
    login_failed,
    login_worked,
    mailbox_synced,
    sync_failed,
    sync_mailbox,
)
from outreach_core.kernel.crypto import UndecryptableSecret
from outreach_core.kernel.endpoint import Background
from outreach_core.kernel.ports import InboxError, InboxSession
from outreach_core.mailboxes.oauth_tokens import LoginUnavailable, login_for

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

T = TypeVar("T")
TICK_S = 5.0
"""How often leases are renewed and mailboxes started or stopped (at most a quarter of the lease span)."""
DB_SLOTS = 16
"""Transactions of the mailbox tasks of one process running at once. A process that starts (or whose mail
server came back) syncs all its mailboxes together: 1,000 first syncs asking the database pool (10 + 10
connections) at once waited more than its 30 s for a connection on a loaded PostgreSQL and failed. They
wait here instead, without a time limit, leaving the pool room for the tick; the IMAP work is not limited."""
BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 300.0

_log = structlog.get_logger()


@dataclass
class _Running:
    mailbox: InboxMailbox
    task: asyncio.Task[None]


class Supervisor:
    """The mailbox tasks of one process (a process runs one runtime); see the module docstring."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        holder: str | None = None,
        ingest: IngestBatch = ingest_batch,
        workspace_ids: list[str] | None = None,
    ) -> None:
        self.runtime = runtime
        self.workspace_ids = workspace_ids
        self.holder = holder or f"{socket.gethostname()[:40]}:{os.getpid()}:{random.randrange(16**6):06x}"
        self.ingest = ingest
        self.running: dict[str, _Running] = {}
        self.backoff_base_s = BACKOFF_BASE_S
        self.backoff_max_s = BACKOFF_MAX_S
        self.last_held = time.monotonic()
        self.rng = random.Random()
        self.synced = asyncio.Event()  # set after every sync (tests wait on it)
        self.db_slots = asyncio.Semaphore(DB_SLOTS)
        self.db_calls: dict[str, set[asyncio.Future[Any]]] = {}  # per mailbox

    @property
    def tick_s(self) -> float:
        return min(TICK_S, self.runtime.settings.inbox_lease_s / 4)

    async def tick(self) -> int:
        """Renew and take leases, start and stop tasks; returns how many mailboxes it started reading (tasks
        restarted are not counted). A tick that started some is followed at once by the next
        (`workers.loop`): `hold` takes at most `TAKE_PER_CALL` mailboxes a call, and a process that waited
        `tick_s` between calls took 1,000 mailboxes in 50 s after a restart (mail that had arrived meanwhile
        waited 25-30 s on average). A tick that started nothing is followed by the loop's sleep."""
        settings = self.runtime.settings
        try:
            held = await self.runtime.system(
                hold,
                self.holder,
                span_s=settings.inbox_lease_s,
                limit=settings.inbox_max_mailboxes,
                workspace_ids=self.workspace_ids,
            )
        except Exception:
            if time.monotonic() - self.last_held > 0.75 * settings.inbox_lease_s:
                await self.stop_tasks(list(self.running))  # another process may take them over soon
            raise
        self.last_held = time.monotonic()
        wanted = {m.id: m for m in held}
        stale = [
            mailbox_id
            for mailbox_id, run in self.running.items()
            if mailbox_id not in wanted
            or run.task.done()
            or run.mailbox.fingerprint != wanted[mailbox_id].fingerprint
        ]
        await self.stop_tasks(stale)
        restarted = set(stale)
        started = 0
        for mailbox_id, mailbox in wanted.items():
            if mailbox_id not in self.running:
                task = asyncio.create_task(self.run_mailbox(mailbox), name=f"inbox:{mailbox_id}")
                self.running[mailbox_id] = _Running(mailbox, task)
                started += mailbox_id not in restarted  # a restarted task is no reason to tick again at once
            else:
                self.running[mailbox_id].mailbox = mailbox  # a new inbox_since, same settings
        return started

    async def stop_tasks(self, mailbox_ids: list[str]) -> None:
        tasks = [self.running.pop(i).task for i in mailbox_ids if i in self.running]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        # transactions of the stopped tasks finish (commit or roll back) before anyone goes on; those of
        # other mailboxes are not waited for
        calls = {call for i in mailbox_ids for call in self.db_calls.get(i, ())}
        if calls:
            await asyncio.wait(calls)

    async def _db(self, mailbox_id: str, work: Awaitable[T]) -> T:
        """A transaction of a mailbox task, shielded from the task's cancellation: a stopped task never
        leaves a transaction half done (nor, on SQLite, the write lock held); `stop_tasks` waits for it. At
        most `DB_SLOTS` run at once (the others wait their turn)."""
        call = asyncio.ensure_future(self._in_turn(work))
        self.db_calls.setdefault(mailbox_id, set()).add(call)
        call.add_done_callback(lambda done: self._db_done(mailbox_id, done))
        return await asyncio.shield(call)

    async def _in_turn(self, work: Awaitable[T]) -> T:
        async with self.db_slots:
            return await work

    def _db_done(self, mailbox_id: str, call: asyncio.Future[Any]) -> None:
        calls = self.db_calls.get(mailbox_id)
        if calls is not None:
            calls.discard(call)
            if not calls:
                del self.db_calls[mailbox_id]
        if not call.cancelled() and call.exception() is not None:
            # also raised to the task, unless it was stopped meanwhile: then this is the only trace
            _log.info("inbox_transaction_failed", exc_info=call.exception())

    async def _ingest(self, runtime: Background, batch: FolderBatch) -> int:
        """Only the recording transaction is shielded (not the parsing nor the AI calls before it); it
        records nothing unless this process still holds the mailbox's lease."""

        def guard(work: Awaitable[int]) -> Awaitable[int]:
            return self._db(batch.mailbox_id, work)

        return await self.ingest(runtime, batch, holder=self.holder, guard=guard)

    async def stop(self) -> None:
        """Stop every task and give the leases back (another process takes the mailboxes over at once)."""
        await self.stop_tasks(list(self.running))
        await self.runtime.system(release, self.holder)

    def backoff(self, failures: int) -> float:
        delay = min(self.backoff_max_s, self.backoff_base_s * 2.0 ** min(failures - 1, 20))
        return delay * (0.5 + 0.5 * self.rng.random())

    # --- one mailbox ----------------------------------------------------------------------------------------

    async def run_mailbox(self, mailbox: InboxMailbox) -> None:
        failures = 0
        while True:
            try:
                failures = 0 if await self._session(mailbox) else failures + 1
            except asyncio.CancelledError:
                raise
            except LeaseLost:  # another process reads it now; the next tick stops this task
                failures += 1
            except Exception as exc:  # a database error, a bug: logged, retried, never the other mailboxes
                failures += 1
                _log.error("inbox_mailbox_error", mailbox=mailbox.id, exc_info=exc)
            await asyncio.sleep(self.backoff(max(failures, 1)))

    async def _session(self, mailbox: InboxMailbox) -> bool:
        """One connection, synced until it fails; True when at least one sync completed."""
        connector = self.runtime.ports.inbox
        if connector is None:
            raise RuntimeError("no inbox connector is configured (ports.inbox)")
        try:
            server, password = await login_for(
                self.runtime.settings,
                self.runtime.ports.oauth,
                self.runtime.ports.clock.now(),
                mailbox.id,
                mailbox.server,
                mailbox.password_encrypted,
                mailbox.oauth_encrypted,
            )
        except UndecryptableSecret:
            reason = "the stored password cannot be decrypted with the server's secret keys; send it again"
            await self._db(mailbox.id, self.runtime.system(login_failed, mailbox.id, reason, refused=True))
            return False
        except LoginUnavailable as exc:  # a revoked grant is the mailbox's error; a passing one is retried
            _log.info("inbox_token_unavailable", mailbox=mailbox.id, reason=exc.reason, revoked=exc.revoked)
            if exc.revoked:
                refused = self.runtime.system(login_failed, mailbox.id, exc.reason, refused=True)
                await self._db(mailbox.id, refused)
            return False
        try:
            session = await connector.connect(server, password)
        except InboxError as exc:
            _log.info("inbox_login_failed", mailbox=mailbox.id, reason=exc.reason, refused=exc.login)
            failed = self.runtime.system(login_failed, mailbox.id, exc.reason, refused=exc.login)
            if await self._db(mailbox.id, failed):
                _log.warning("inbox_mailbox_error_status", mailbox=mailbox.id, reason=exc.reason)
            return False
        progress = _Progress()
        try:
            if await self._db(mailbox.id, self.runtime.system(login_worked, mailbox.id)):
                _log.info("inbox_mailbox_recovered", mailbox=mailbox.id)
            await self._serve(session, mailbox, progress)
        except InboxError as exc:
            _log.info("inbox_session_ended", mailbox=mailbox.id, reason=exc.reason)
            await self._db(mailbox.id, self.runtime.system(sync_failed, mailbox.id, exc.reason))
        finally:
            await session.close()
        return progress.synced

    async def _serve(self, session: InboxSession, mailbox: InboxMailbox, progress: _Progress) -> None:
        folders = await session.folders()
        ordered = sorted(folders, key=lambda f: f.role == "inbox")  # junk first: INBOX stays open for IDLE
        use_idle = session.can_idle and not mailbox.inbox_poll
        poll_s = self.runtime.settings.inbox_poll_s
        while True:
            current = self.running.get(mailbox.id)
            await sync_mailbox(
                self.runtime,
                session,
                current.mailbox if current else mailbox,
                ordered,
                ingest=self._ingest,
                read=lambda work: self._db(mailbox.id, work),
            )
            progress.synced = True
            now = time.monotonic()
            if progress.marked_at is None or now - progress.marked_at >= SYNCED_MARK_S:
                await self._db(mailbox.id, self.runtime.system(mailbox_synced, mailbox.id))
                progress.marked_at = now
            self.synced.set()
            if use_idle:
                await session.idle(poll_s)
            else:
                await asyncio.sleep(poll_s)


@dataclass
class _Progress:
    synced: bool = False
    marked_at: float | None = None  # when `mailbox_synced` was last written (monotonic)


_supervisors: weakref.WeakKeyDictionary[Runtime, Supervisor] = weakref.WeakKeyDictionary()


def supervisor(runtime: Runtime) -> Supervisor:
    found = _supervisors.get(runtime)
    if found is None:
        found = _supervisors[runtime] = Supervisor(runtime)
    return found


async def tick(runtime: Runtime) -> int:
    """Renew leases and start or stop mailbox tasks; returns how many tasks started (then the loop ticks again
    at once)."""
    return await supervisor(runtime).tick()


async def stop(runtime: Runtime) -> None:
    """When the worker stops: end every mailbox task and give the leases back."""
    with contextlib.suppress(KeyError):
        await _supervisors[runtime].stop()
