"""The inbox worker against a real Dovecot: IDLE and poll, first sync window, junk folder, UIDVALIDITY."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx

from outreach_core.kernel.ports import InboxConnector, InboxSession, MailServer
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.imap_client import Maildrop
from tests.inbox_worker.helpers import (
    Recorder,
    Workers,
    checkpoints_of,
    imap_mailbox,
    mailbox_json,
    mailbox_row,
    message,
    until,
)
from tests.mail_servers import MailServers


class CountingConnector:
    """The real adapter, counting IDLE calls of the sessions it opens (to tell IDLE from polling)."""

    def __init__(self, inner: InboxConnector | None) -> None:
        assert inner is not None
        self.inner: InboxConnector = inner
        self.idles = 0
        self.sessions = 0

    async def connect(self, server: MailServer, password: str) -> InboxSession:
        session = await self.inner.connect(server, password)
        self.sessions += 1
        outer = self
        real_idle = session.idle

        async def idle(seconds: float) -> bool:
            outer.idles += 1
            return await real_idle(seconds)

        session.idle = idle  # type: ignore[method-assign,unused-ignore]
        return session


async def test_idle_reads_new_mail_at_once_and_never_marks_it_read(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
    http: httpx.AsyncClient,
) -> None:
    rt = make_runtime(inbox_poll_s=60.0)  # a poll would come far too late: only IDLE can deliver in time
    counting = CountingConnector(rt.ports.inbox)
    rt.ports.inbox = counting
    ws = await make_workspace()
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers)
    drop = Maildrop(mail_servers, user, password)
    await drop.append(message("first"), message("second"))
    assert (await mailbox_json(http, ws, mailbox_id))["lastSyncedAt"] is None

    workers.start(rt, recorder, [ws.workspace_id])
    await until(lambda: len(recorder.of(mailbox_id)) == 2, what="the two waiting messages")
    assert recorder.subjects(mailbox_id) == ["first", "second"]
    await until(lambda: counting.idles >= 1, what="IDLE")

    await drop.append(message("third"))
    await until(lambda: len(recorder.of(mailbox_id)) == 3, timeout=5.0, what="the message delivered in IDLE")
    assert recorder.subjects(mailbox_id) == ["first", "second", "third"]
    assert [s.uid for s in recorder.of(mailbox_id)] == [1, 2, 3]
    assert counting.sessions == 1  # the same connection all along
    idles = counting.idles
    await asyncio.sleep(1.0)
    assert counting.idles - idles <= 1  # waiting in IDLE, not spinning through syncs

    assert await drop.unseen() == 3  # BODY.PEEK and EXAMINE: the owner still sees them unread
    (uidvalidity, last_uid) = (await checkpoints_of(rt, mailbox_id))["INBOX"]
    assert last_uid == 3 and uidvalidity == await drop.uidvalidity()
    shown = await mailbox_json(http, ws, mailbox_id)
    assert shown["lastSyncedAt"] is not None and shown["syncError"] is None


async def test_poll_mode_reads_on_the_interval_without_idle(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
) -> None:
    rt = make_runtime(inbox_poll_s=0.5)
    counting = CountingConnector(rt.ports.inbox)
    rt.ports.inbox = counting
    ws = await make_workspace()
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers, inbox_poll=True)
    drop = Maildrop(mail_servers, user, password)

    workers.start(rt, recorder, [ws.workspace_id])
    await until(lambda: "INBOX" in recorder_folders(recorder, mailbox_id), what="the first sync")
    await drop.append(message("polled"))
    await until(lambda: recorder.subjects(mailbox_id) == ["polled"], timeout=5.0, what="the polled message")
    assert counting.idles == 0 and counting.sessions == 1


def recorder_folders(recorder: Recorder, mailbox_id: str) -> set[str]:
    return {b.folder for b in recorder.batches if b.mailbox_id == mailbox_id}


async def test_first_sync_reads_only_what_arrived_after_the_window_by_internaldate(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
) -> None:
    rt = make_runtime()
    ws = await make_workspace()
    connected = datetime.now(UTC) - timedelta(days=1)
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers, created_at=connected)
    drop = Maildrop(mail_servers, user, password)
    now = datetime.now(UTC)
    # arrival (INTERNALDATE) decides; the Date header says the opposite each time
    await drop.append(message("old, claims new", date=now), when=connected - timedelta(days=10))
    await drop.append(message("just too old", date=now), when=connected - timedelta(days=3, hours=2))
    long_ago = now - timedelta(days=30)
    await drop.append(message("in the window", date=long_ago), when=connected - timedelta(days=2))
    await drop.append(message("after connecting", date=long_ago), when=connected + timedelta(hours=1))

    workers.start(rt, recorder, [ws.workspace_id])
    await until(lambda: "INBOX" in recorder_folders(recorder, mailbox_id), what="the first sync")
    assert recorder.subjects(mailbox_id) == ["in the window", "after connecting"]
    row = await mailbox_row(rt, mailbox_id)
    assert row.inbox_since == row.created_at - timedelta(days=3)
    assert (await checkpoints_of(rt, mailbox_id))["INBOX"][1] == 4


async def test_an_empty_or_old_mailbox_starts_after_what_is_there(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
) -> None:
    rt = make_runtime(inbox_poll_s=0.5)
    ws = await make_workspace()
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers)
    drop = Maildrop(mail_servers, user, password)
    await drop.append(message("years ago"), when=datetime.now(UTC) - timedelta(days=400))
    workers.start(rt, recorder, [ws.workspace_id])
    await until(lambda: "INBOX" in recorder_folders(recorder, mailbox_id), what="the first sync")
    assert recorder.of(mailbox_id) == []
    assert (await checkpoints_of(rt, mailbox_id))["INBOX"][1] == 1
    await drop.append(message("new"))
    await until(lambda: recorder.subjects(mailbox_id) == ["new"], what="the new message")


async def test_junk_folder_is_read_and_a_new_uidvalidity_reads_it_again(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
) -> None:
    rt = make_runtime(inbox_poll_s=0.5)
    ws = await make_workspace()
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers)
    drop = Maildrop(mail_servers, user, password)
    await drop.command("create", "Spam")
    await drop.append(message("spam one"), message("spam two"), folder="Spam")
    await drop.append(message("inbox one"))

    workers.start(rt, recorder, [ws.workspace_id])
    await until(lambda: len(recorder.of(mailbox_id)) == 3, what="inbox and junk")
    assert recorder.subjects(mailbox_id, "Spam") == ["spam one", "spam two"]
    assert {s.role for s in recorder.of(mailbox_id, "Spam")} == {"junk"}
    before = await drop.uidvalidity("Spam")
    assert (await checkpoints_of(rt, mailbox_id))["Spam"] == (before, 2)

    # the folder is renumbered (deleted and made again): read again from the window under the new UIDVALIDITY
    await drop.command("delete", "Spam")
    await drop.command("create", "Spam")
    await drop.append(message("spam three"), folder="Spam")
    after = await drop.uidvalidity("Spam")
    assert after != before
    await until(lambda: len(recorder.of(mailbox_id, "Spam")) == 3, what="the renumbered junk folder")
    latest = recorder.of(mailbox_id, "Spam")[-1]
    assert (latest.uidvalidity, latest.uid, subject_of_seen(latest.raw)) == (after, 1, "spam three")
    assert (await checkpoints_of(rt, mailbox_id))["Spam"] == (after, 1)
    assert recorder.subjects(mailbox_id, "INBOX") == ["inbox one"]


def subject_of_seen(raw: bytes) -> str:
    from tests.inbox_worker.helpers import subject_of

    return subject_of(raw)


async def test_a_starttls_mailbox_is_read_the_same_way(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
) -> None:
    rt = make_runtime()
    ws = await make_workspace()
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers, security="starttls")
    await Maildrop(mail_servers, user, password).append(message("over starttls"))
    workers.start(rt, recorder, [ws.workspace_id])
    await until(lambda: recorder.subjects(mailbox_id) == ["over starttls"], what="the message")
    assert (await mailbox_row(rt, mailbox_id)).sync_error is None


async def test_mail_announced_during_a_search_or_a_fetch_wakes_the_next_idle(
    make_runtime: Callable[..., Runtime], mail_servers: MailServers
) -> None:
    """The server announces new mail (`* n EXISTS`) once, in the answer to the command running when it sees
    it. Announced during UID SEARCH or UID FETCH (asynchronous commands in aioimaplib, which dropped such an
    EXISTS), the next IDLE still returns at once, woken, instead of waiting for the poll while the server,
    having told already, says nothing more (the bounce corpus test lost 60 s to this in one run of two)."""
    rt = make_runtime()
    assert rt.ports.inbox is not None
    user, password = mail_servers.add_user()
    drop = Maildrop(mail_servers, user, password)
    await drop.append(message("before"))
    imap = mail_servers.imap_settings(user, "tls")
    session = await rt.ports.inbox.connect(MailServer(imap["host"], imap["port"], "tls", user), password)
    try:
        for during in ("UID SEARCH", "UID FETCH"):
            status = await session.examine("INBOX")
            await drop.append(message(f"during {during}"))  # after EXAMINE counted the folder
            if during == "UID SEARCH":
                assert await session.uids_from(status.uidnext or 1) in ([], [status.uidnext])
            else:
                assert [m.uid for m in await session.fetch([1], 10_000)] == [1]
            assert await session.idle(10.0) is True, f"the EXISTS of {during} was lost"
    finally:
        await session.close()
