"""The inbox worker when things go wrong: restarts mid-batch, connections dropped mid-fetch, two workers on
the same mailboxes, refused logins, paused mailboxes. Real Dovecot throughout."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx

from outreach_core.inbox.pipeline import FolderBatch
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.imap_client import Maildrop
from tests.inbox_worker.conftest import inbox_runtime
from tests.inbox_worker.helpers import (
    Recorder,
    Replies,
    Workers,
    checkpoints_of,
    imap_mailbox,
    lease_of,
    mailbox_json,
    mailbox_row,
    message,
    until,
)
from tests.inbox_worker.proxy import CuttingProxy
from tests.mail_servers import MailServers
from tests.mailboxes.helpers import API


def uids(*recorders: Recorder, mailbox_id: str) -> list[int]:
    return sorted(s.uid for r in recorders for s in r.of(mailbox_id))


async def test_a_restart_in_the_middle_of_a_batch_reads_it_again_and_nothing_twice(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
) -> None:
    rt = make_runtime(inbox_batch_size=2, inbox_poll_s=0.5)
    ws = await make_workspace()
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers)
    replies = Replies(ws)
    await Maildrop(mail_servers, user, password).append(*[await replies.make(f"m{i}") for i in range(1, 6)])

    first = Recorder()
    stuck, killed = asyncio.Event(), asyncio.Event()

    async def die_in_second_batch(batch: FolderBatch) -> None:
        if batch.messages and batch.messages[0].uid == 3:
            stuck.set()
            await killed.wait()
            raise RuntimeError("the process died while recording this batch")  # nothing of it committed

    first.before = die_in_second_batch
    sup = workers.start(rt, first, [ws.workspace_id], holder="first")
    await asyncio.wait_for(stuck.wait(), 10)
    assert uids(first, mailbox_id=mailbox_id) == [1, 2]
    stopping = asyncio.create_task(workers.stop(sup))  # waits for the batch being recorded
    await asyncio.sleep(0.1)
    killed.set()
    await stopping
    assert await lease_of(rt, mailbox_id) is None  # stopping gave the lease back
    assert (await checkpoints_of(rt, mailbox_id))["INBOX"][1] == 2

    second = Recorder()
    workers.start(rt, second, [ws.workspace_id], holder="second")
    await until(lambda: uids(first, second, mailbox_id=mailbox_id) == [1, 2, 3, 4, 5], what="the rest")
    assert uids(second, mailbox_id=mailbox_id) == [3, 4, 5]
    assert (await checkpoints_of(rt, mailbox_id))["INBOX"][1] == 5
    await replies.assert_each_recorded_once()


async def test_a_worker_that_dies_loses_its_mailboxes_when_the_lease_ends(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
) -> None:
    rt = make_runtime(inbox_lease_s=1.0, inbox_poll_s=0.3)
    ws = await make_workspace()
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers)
    drop = Maildrop(mail_servers, user, password)
    await drop.append(message("before"))
    first = Recorder()
    sup = workers.start(rt, first, [ws.workspace_id], holder="dies")
    await until(lambda: len(first.of(mailbox_id)) == 1, what="the first message")
    # killed: the loop and the tasks end, the lease is not given back
    await workers.halt(sup)
    await sup.stop_tasks(list(sup.running))
    assert await lease_of(rt, mailbox_id) == "dies"

    second = Recorder()
    workers.start(rt, second, [ws.workspace_id], holder="survivor")
    await drop.append(message("after"))
    await until(lambda: len(second.of(mailbox_id)) == 1, what="the takeover")
    assert [s.uid for s in second.of(mailbox_id)] == [2]
    assert await lease_of(rt, mailbox_id) == "survivor"


async def test_a_connection_dropped_mid_fetch_is_read_again_after_reconnecting(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
) -> None:
    proxy = CuttingProxy(mail_servers.imap.host, mail_servers.imap.tls_port, cut_after=150_000)
    await proxy.start()
    try:
        rt = make_runtime(inbox_batch_size=2, inbox_poll_s=0.5)
        ws = await make_workspace()
        mailbox_id, user, password = await imap_mailbox(ws, mail_servers, port=proxy.port)
        drop = Maildrop(mail_servers, user, password)
        replies = Replies(ws)
        await drop.append(*[await replies.make(f"big {i}", size=100_000) for i in range(1, 5)])

        seen_errors: list[str | None] = []

        async def note_error(batch: FolderBatch) -> None:
            seen_errors.append((await mailbox_row(rt, mailbox_id)).sync_error)

        recorder.before = note_error
        workers.start(rt, recorder, [ws.workspace_id])
        await until(lambda: uids(recorder, mailbox_id=mailbox_id) == [1, 2, 3, 4], what="every message")
        assert proxy.cut == 1 and proxy.connections >= 2
        assert seen_errors[0] is not None and "closed the connection" in seen_errors[0]
        assert all(len(s.raw) > 100_000 for s in recorder.of(mailbox_id))
        assert (await mailbox_row(rt, mailbox_id)).sync_error is None  # the next sync cleared it
        await replies.assert_each_recorded_once()
    finally:
        await proxy.stop()


async def test_two_workers_on_the_same_mailboxes_share_them_without_duplicates(
    runtime: Runtime,
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
) -> None:
    # two runtimes with their own engines: as two worker processes on the same database
    a = inbox_runtime(runtime, inbox_poll_s=0.3)
    b_settings = a.settings
    b = Runtime(b_settings, ports=Ports(inbox=a.ports.inbox))
    try:
        ws = await make_workspace()
        boxes = [await imap_mailbox(ws, mail_servers) for _ in range(6)]
        replies = Replies(ws)
        for _, user, password in boxes:
            await Maildrop(mail_servers, user, password).append(
                await replies.make("one"), await replies.make("two")
            )
        rec_a, rec_b = Recorder(), Recorder()
        sup_a = workers.start(a, rec_a, [ws.workspace_id], holder="worker-a", every=0.05)
        sup_b = workers.start(b, rec_b, [ws.workspace_id], holder="worker-b", every=0.05)

        def all_read() -> bool:
            return all(uids(rec_a, rec_b, mailbox_id=m) == [1, 2] for m, _, _ in boxes)

        await until(all_read, what="every mailbox read once")
        for _, user, password in boxes:
            await Maildrop(mail_servers, user, password).append(await replies.make("three"))
        await until(
            lambda: all(uids(rec_a, rec_b, mailbox_id=m) == [1, 2, 3] for m, _, _ in boxes), what="new mail"
        )
        held_a, held_b = set(sup_a.running), set(sup_b.running)
        assert not held_a & held_b and held_a | held_b == {m for m, _, _ in boxes}
        for mailbox_id, _, _ in boxes:  # each mailbox read by one worker only
            assert not (rec_a.of(mailbox_id) and rec_b.of(mailbox_id))

        await workers.stop(sup_a)  # its mailboxes move to the other worker at once
        await until(lambda: set(sup_b.running) == {m for m, _, _ in boxes}, what="the takeover")
        for _, user, password in boxes:
            await Maildrop(mail_servers, user, password).append(await replies.make("four"))
        await until(
            lambda: all(uids(rec_a, rec_b, mailbox_id=m) == [1, 2, 3, 4] for m, _, _ in boxes),
            what="mail after the takeover",
        )
        await replies.assert_each_recorded_once()
    finally:
        await b.engine.dispose()


async def test_refused_logins_put_the_mailbox_in_error_until_a_login_works(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
    http: httpx.AsyncClient,
) -> None:
    rt = make_runtime(inbox_poll_s=0.5)
    ws = await make_workspace()
    stored = "the-password-we-have-1"
    mailbox_id, user, _ = await imap_mailbox(ws, mail_servers, password=stored)  # the server has another
    sup = workers.start(rt, recorder, [ws.workspace_id])

    async def in_error() -> bool:
        return bool((await mailbox_json(http, ws, mailbox_id))["status"] == "error")

    await until(in_error, what="status error")
    shown = await mailbox_json(http, ws, mailbox_id)
    assert shown["statusReason"].startswith("the inbox could not log in 3 times in a row: IMAP login failed")
    assert shown["syncError"] == "IMAP login failed: the server refused the user name or password"
    assert (await mailbox_row(rt, mailbox_id)).inbox_error is True
    assert mailbox_id in sup.running  # an error the inbox set is retried

    mail_servers.users.add(user, stored)  # the owner fixes the password on the server
    await Maildrop(mail_servers, user, stored).append(message("after the fix"))
    await until(lambda: recorder.subjects(mailbox_id) == ["after the fix"], what="a sync after recovering")
    shown = await mailbox_json(http, ws, mailbox_id)
    assert (shown["status"], shown["statusReason"], shown["syncError"]) == ("active", None, None)
    row = await mailbox_row(rt, mailbox_id)
    assert (row.inbox_error, row.inbox_failures) == (False, 0)


async def test_paused_mailboxes_and_errors_the_inbox_did_not_set_are_not_read(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
    http: httpx.AsyncClient,
) -> None:
    rt = make_runtime(inbox_poll_s=0.3)
    ws = await make_workspace()
    mailbox_id, user, password = await imap_mailbox(ws, mail_servers)
    sender_error, _, _ = await imap_mailbox(ws, mail_servers, status="error", status_reason="SMTP refused")
    drop = Maildrop(mail_servers, user, password)
    await drop.append(message("before the pause"))
    sup = workers.start(rt, recorder, [ws.workspace_id])
    await until(lambda: recorder.subjects(mailbox_id) == ["before the pause"], what="the first message")
    assert sender_error not in sup.running and await lease_of(rt, sender_error) is None

    url = f"{API}/mailboxes/{mailbox_id}"
    response = await http.patch(url, headers=ws.headers, json={"status": "paused"})
    assert response.status_code == 200, response.text
    await until(lambda: mailbox_id not in sup.running, what="the task to stop")
    assert await lease_of(rt, mailbox_id) is None
    await drop.append(message("while paused"))
    await asyncio.sleep(1.0)  # three poll intervals
    assert recorder.subjects(mailbox_id) == ["before the pause"]

    response = await http.patch(url, headers=ws.headers, json={"status": "active"})
    assert response.status_code == 200, response.text
    await until(lambda: recorder.subjects(mailbox_id)[-1] == "while paused", what="reading again")


async def test_a_quiet_mailbox_shows_its_syncs_and_clears_the_error_of_a_dropped_connection(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    recorder: Recorder,
    http: httpx.AsyncClient,
) -> None:
    proxy = CuttingProxy(mail_servers.imap.host, mail_servers.imap.tls_port, cut_after=0, cuts=0)
    await proxy.start()
    try:
        rt = make_runtime(inbox_poll_s=0.3)
        ws = await make_workspace()
        mailbox_id, _, _ = await imap_mailbox(ws, mail_servers, port=proxy.port, inbox_poll=True)
        workers.start(rt, recorder, [ws.workspace_id])

        async def shown() -> dict[str, object]:
            return await mailbox_json(http, ws, mailbox_id)

        async def synced_once() -> bool:
            return (await shown())["lastSyncedAt"] is not None

        await until(synced_once, what="the first sync")
        first = (await shown())["lastSyncedAt"]
        proxy.block()  # the connection drops; reconnecting fails while blocked

        async def has_error() -> bool:
            return (await shown())["syncError"] is not None

        await until(has_error, what="the error of the dropped connection")
        proxy.unblock()

        async def recovered() -> bool:
            now = await shown()
            return now["syncError"] is None and str(now["lastSyncedAt"]) > str(first)

        await until(recovered, what="a sync clearing the error with no new mail")
        assert recorder.seen == []  # nothing arrived: no batch recorded anything
    finally:
        await proxy.stop()
