"""Leases and the recording transaction: a worker that lost a mailbox's lease records nothing of it;
stopping one mailbox's task never waits for another mailbox's transaction, nor for its own AI calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from outreach_core.inbox.pipeline import FolderBatch, LeaseLost, ingest_batch
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import inbox_folders, inbox_leases
from outreach_core.kernel.ports import ChatAnswer, Ports
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.imap_client import Maildrop
from tests.inbox.ingest import batch, fetched, messages_of, reply_to, sent_campaign, threads_of
from tests.inbox_worker.helpers import (
    Recorder,
    Replies,
    Workers,
    checkpoints_of,
    imap_mailbox,
    message,
    until,
)
from tests.mail_servers import MailServers, SmtpServer, Users

LEAD = "ada@lead.example"


async def set_lease(rt: Runtime, mailbox_id: str, holder: str) -> None:
    async def write(ctx: SystemContext) -> None:
        leases = system_scope(inbox_leases)
        await ctx.conn.execute(leases.delete().where(inbox_leases.c.mailbox_id == mailbox_id))
        until_at = datetime.now(UTC) + timedelta(minutes=5)
        await ctx.conn.execute(
            leases.insert({"mailbox_id": mailbox_id, "holder": holder, "expires_at": until_at})
        )

    await rt.system(write)


async def folders_of(rt: Runtime, mailbox_id: str) -> list[int]:
    async def read(ctx: SystemContext) -> list[int]:
        stmt = system_scope(inbox_folders).select().where(inbox_folders.c.mailbox_id == mailbox_id)
        return [r.last_uid for r in await ctx.conn.execute(stmt)]

    return await rt.system_read(read)


async def test_a_batch_of_a_worker_whose_lease_was_taken_over_records_nothing(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    sent = await sent_campaign(http, ws, smtp_servers["starttls"], mail_users, [LEAD])
    rt = ws.runtime
    reply = batch(sent, fetched(reply_to(sent.received[LEAD], "Interested, call me")))
    await set_lease(rt, sent.mailbox_id, "new-worker")  # taken over while the old one fetched

    with pytest.raises(LeaseLost):
        await ingest_batch(rt, reply, holder="old-worker")
    assert await messages_of(ws) == [] and await threads_of(ws) == []
    assert await folders_of(rt, sent.mailbox_id) == []  # the checkpoint did not move either

    assert await ingest_batch(rt, reply, holder="new-worker") == 1  # the holder records it
    assert [t.message_count for t in await threads_of(ws)] == [1]


async def test_stopping_a_mailbox_does_not_wait_for_another_mailboxs_transaction(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
) -> None:
    rt = make_runtime(inbox_poll_s=0.3)
    ws = await make_workspace()
    slow_id, slow_user, slow_password = await imap_mailbox(ws, mail_servers)
    quick_id, quick_user, quick_password = await imap_mailbox(ws, mail_servers)
    recorder = Recorder()
    in_slow, release_slow = asyncio.Event(), asyncio.Event()

    async def hold_slow(b: FolderBatch) -> None:
        if b.mailbox_id == slow_id and b.messages:
            in_slow.set()
            await release_slow.wait()  # a recording transaction of the slow mailbox that takes long

    recorder.before = hold_slow
    sup = workers.start(rt, recorder, [ws.workspace_id])
    await until(lambda: {slow_id, quick_id} <= set(sup.running), what="both tasks")
    await Maildrop(mail_servers, quick_user, quick_password).append(message("quick"))
    await until(lambda: recorder.subjects(quick_id) == ["quick"], what="the quick mailbox read")
    await Maildrop(mail_servers, slow_user, slow_password).append(message("slow"))
    await asyncio.wait_for(in_slow.wait(), 10)

    await workers.halt(sup)
    # The slow transaction is held until after this returns, so returning at all proves it was not waited
    # for; the bound only keeps a regression from hanging the suite (2 s was exceeded once under CI's load).
    await asyncio.wait_for(sup.stop_tasks([quick_id]), 10)
    assert quick_id not in sup.running and slow_id in sup.running
    release_slow.set()
    await until(lambda: recorder.subjects(slow_id) == ["slow"], what="the slow batch recorded")
    await sup.stop()


class StuckAi:
    """An AI provider that never answers (a slow paid API; the only fake here)."""

    def __init__(self) -> None:
        self.called = asyncio.Event()

    async def complete(self, messages: list[dict[str, str]], *, json_answer: bool = True) -> ChatAnswer:
        self.called.set()
        await asyncio.Event().wait()
        raise AssertionError("never answers")


async def test_stopping_a_mailbox_does_not_wait_for_its_ai_calls(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
) -> None:
    base = make_runtime(inbox_poll_s=0.3)
    ai = StuckAi()
    rt = Runtime(base.settings, engine=base.engine, ports=Ports(inbox=base.ports.inbox, ai=ai))
    ws = await make_workspace()  # aiLabels is on by default
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers)
    replies = Replies(ws)
    await Maildrop(mail_servers, user, password).append(await replies.make("a question"))
    recorder = Recorder()
    sup = workers.start(rt, recorder, [ws.workspace_id])
    await asyncio.wait_for(ai.called.wait(), 10)

    await workers.halt(sup)
    await asyncio.wait_for(sup.stop_tasks([mailbox_id]), 2)  # the AI call is not shielded
    assert recorder.seen == [] and "INBOX" not in await checkpoints_of(rt, mailbox_id)
