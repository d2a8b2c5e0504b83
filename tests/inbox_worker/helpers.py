"""Helpers for the inbox worker tests: mailboxes on the test Dovecot, the other side of the mailbox (a plain
stdlib IMAP client that APPENDs mail with a chosen arrival time), supervisors run like the worker loop runs
them, and a recorder of the batches `ingest_batch` committed."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Any

import httpx
from sqlalchemy import select

from outreach_core.inbox.pipeline import FolderBatch, Guard, ingest_batch
from outreach_core.kernel.context import SystemContext, WorkspaceContext, scoped
from outreach_core.kernel.db.tables import (
    inbox_folders,
    inbox_leases,
    inbox_messages,
    mailboxes,
    outbox,
    threads,
)
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.runtime import Runtime
from tests.campaigns.helpers import add_lead
from tests.conftest import WorkspaceHandle
from tests.mail_servers import MailServers, Security
from tests.mailboxes.helpers import API, seed_mailbox
from workers.inbox import Supervisor


@dataclass(frozen=True)
class Seen:
    mailbox_id: str
    folder: str
    role: str
    uidvalidity: int
    uid: int
    arrived_at: datetime
    raw: bytes


@dataclass
class Recorder:
    """An `ingest` for supervisors: the real `ingest_batch`, with `before(batch)` run at the start of the
    recording transaction's guard (so it may raise or wait like a crash or a slow transaction); what it
    committed is kept in `seen`."""

    seen: list[Seen] = field(default_factory=list)
    batches: list[FolderBatch] = field(default_factory=list)
    before: Callable[[FolderBatch], Awaitable[None]] | None = None

    async def __call__(
        self, runtime: Runtime, batch: FolderBatch, *, holder: str | None = None, guard: Guard | None = None
    ) -> int:
        before = self.before

        async def recording(work: Awaitable[int]) -> int:
            if before is not None:
                try:
                    await before(batch)
                except BaseException:
                    work.close()  # type: ignore[attr-defined]  # the transaction never starts
                    raise
            return await work

        def guarded(work: Awaitable[int]) -> Awaitable[int]:
            return recording(work) if guard is None else guard(recording(work))

        handled = await ingest_batch(runtime, batch, holder=holder, guard=guarded)
        self.batches.append(batch)
        self.seen.extend(
            Seen(batch.mailbox_id, batch.folder, batch.role, batch.uidvalidity, m.uid, m.arrived_at, m.raw)
            for m in batch.messages
        )
        return handled

    def of(self, mailbox_id: str, folder: str | None = None) -> list[Seen]:
        return [s for s in self.seen if s.mailbox_id == mailbox_id and (folder is None or s.folder == folder)]

    def subjects(self, mailbox_id: str, folder: str | None = None) -> list[str]:
        return [subject_of(s.raw) for s in self.of(mailbox_id, folder)]


def subject_of(raw: bytes) -> str:
    for line in raw.split(b"\r\n"):
        if line.lower().startswith(b"subject: "):
            return line[9:].decode()
    return ""


@dataclass
class Workers:
    """Supervisors ticking in the background like `run_workers` runs them (every `every` seconds)."""

    running: dict[Supervisor, tuple[asyncio.Task[None], asyncio.Event]] = field(default_factory=dict)

    def start(
        self,
        runtime: Runtime,
        ingest: Recorder,
        workspaces: list[str],
        *,
        holder: str | None = None,
        every: float = 0.2,
    ) -> Supervisor:
        sup = Supervisor(runtime, holder=holder, ingest=ingest, workspace_ids=workspaces)
        sup.backoff_base_s = 0.05
        sup.backoff_max_s = 0.5

        stop = asyncio.Event()

        async def loop() -> None:  # a tick is never cancelled halfway (as in `run_workers`)
            while not stop.is_set():
                await sup.tick()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), every)

        self.running[sup] = (asyncio.create_task(loop()), stop)
        return sup

    async def halt(self, sup: Supervisor) -> None:
        """The loop ends after its current tick; the mailbox tasks keep running."""
        task, stop = self.running.pop(sup)
        stop.set()
        await task

    async def stop(self, sup: Supervisor) -> None:
        await self.halt(sup)
        await sup.stop()

    async def stop_all(self) -> None:
        for sup in list(self.running):
            await self.stop(sup)


async def until(check: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> None:
    """Wait until `check()` (sync or async) is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


async def imap_mailbox(
    ws: WorkspaceHandle,
    servers: MailServers,
    *,
    security: Security = "tls",
    password: str | None = None,
    port: int | None = None,
    **columns: Any,
) -> tuple[str, str, str]:
    """A mailbox row whose IMAP settings point at the test Dovecot (a new user); (id, user, password)."""
    user, secret = servers.add_user()
    settings = servers.imap_settings(user, security)
    mailbox_id = await seed_mailbox(
        ws,
        user,
        password=password or secret,
        imap_host=settings["host"],
        imap_port=port or settings["port"],
        imap_security=security,
        imap_user=user,
        **columns,
    )
    return mailbox_id, user, secret


def message(
    subject: str, *, sender: str = "lead@example.com", date: datetime | None = None, size: int = 0
) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "box@mail.test"
    msg["Subject"] = subject
    msg["Message-ID"] = make_msgid(domain="example.com")
    msg["Date"] = format_datetime(date or datetime.now(UTC))
    msg.set_content(f"Body of {subject}\n" + ("x" * 76 + "\n") * (size // 77))
    return msg.as_bytes().replace(b"\n", b"\r\n")


@dataclass
class Replies:
    """Replies from real leads of the workspace (each from a new lead, matched by its address), and what the
    workspace must show of them: each stored once, one thread each with one message, one `lead.replied`."""

    ws: WorkspaceHandle
    message_ids: list[str] = field(default_factory=list)

    async def make(self, subject: str, *, size: int = 0) -> bytes:
        email = f"lead-{new_id('x')[-10:].lower()}@lead.example"
        await add_lead(self.ws, email)
        raw = message(f"Re: {subject}", sender=email, size=size)
        for line in raw.split(b"\r\n"):
            if line.lower().startswith(b"message-id: "):
                self.message_ids.append(line[12:].decode().strip("<>"))
        return raw

    async def assert_each_recorded_once(self) -> None:
        async def read(ctx: WorkspaceContext) -> tuple[list[Any], list[Any], list[Any]]:
            stored = (await ctx.conn.execute(scoped(ctx, inbox_messages).select())).all()
            found = (await ctx.conn.execute(scoped(ctx, threads).select())).all()
            events = (await ctx.conn.execute(scoped(ctx, outbox).select())).all()
            return stored, found, events

        stored, found, events = await self.ws.runtime.read(await self.ws.principal(), read)
        want = sorted(self.message_ids)
        assert sorted((m.message_id or "").strip("<>") for m in stored) == want
        assert {m.kind for m in stored} == {"reply"}
        assert len(found) == len(want) and all(t.message_count == 1 for t in found)
        replied = [e.payload["data"]["message"]["id"] for e in events if e.kind == "lead.replied"]
        assert sorted(replied) == sorted(m.id for m in stored)


async def checkpoints_of(runtime: Runtime, mailbox_id: str) -> dict[str, tuple[int, int]]:
    async def read(ctx: SystemContext) -> dict[str, tuple[int, int]]:
        rows = await ctx.conn.execute(select(inbox_folders).where(inbox_folders.c.mailbox_id == mailbox_id))
        return {r.folder: (r.uidvalidity, r.last_uid) for r in rows}

    return await runtime.system_read(read)


async def mailbox_row(runtime: Runtime, mailbox_id: str) -> Any:
    async def read(ctx: SystemContext) -> Any:
        return (await ctx.conn.execute(select(mailboxes).where(mailboxes.c.id == mailbox_id))).one()

    return await runtime.system_read(read)


async def lease_of(runtime: Runtime, mailbox_id: str) -> str | None:
    async def read(ctx: SystemContext) -> str | None:
        stmt = select(inbox_leases.c.holder).where(inbox_leases.c.mailbox_id == mailbox_id)
        return (await ctx.conn.execute(stmt)).scalar_one_or_none()

    return await runtime.system_read(read)


async def mailbox_json(http: httpx.AsyncClient, ws: WorkspaceHandle, mailbox_id: str) -> dict[str, Any]:
    response = await http.get(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]
