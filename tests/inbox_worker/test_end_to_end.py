"""End to end: the sender worker really sends a campaign over SMTP, the lead's answers land in the mailbox on
Dovecot (APPENDed as a delivery agent would), and the inbox worker turns them into labelled threads."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from outreach_core.crypto import decrypt
from outreach_core.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.inbox.ingest import dsn, messages_of, reply_to, sent_campaign, threads_of
from tests.inbox_worker.helpers import Maildrop, Recorder, Workers, mailbox_row, until
from tests.mail_servers import MailServers
from tests.sending.helpers import rows, update_rows


async def test_replies_delivered_to_the_mailbox_become_labelled_threads_once(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    http: httpx.AsyncClient,
) -> None:
    rt = make_runtime(inbox_poll_s=60.0)
    ws = await make_workspace()
    ann, bob = "ann@ann-corp.example", "bob@bob-corp.example"
    sent = await sent_campaign(http, ws, mail_servers.smtp["starttls"], mail_servers.users, [ann, bob])
    imap = mail_servers.imap_settings(sent.mailbox_email, "tls")
    await update_rows(
        ws, "mailboxes", {"imap_host": imap["host"], "imap_port": imap["port"]}, id=sent.mailbox_id
    )
    row = await mailbox_row(rt, sent.mailbox_id)
    drop = Maildrop(mail_servers, row.imap_user, decrypt(rt.settings, row.password_encrypted))

    first = Recorder()
    sup = workers.start(rt, first, [ws.workspace_id], holder="e2e-1")
    await until(lambda: first.batches, what="the first sync")

    appended = time.monotonic()
    await drop.append(reply_to(sent.received[ann], "Please remove me from your mailing list."))
    await until(lambda: threads_of(ws), timeout=5.0, what="a thread within 5 s")
    took = time.monotonic() - appended
    [thread] = await threads_of(ws)
    assert thread.kind == "unsubscribe_request" and thread.label_name == "Unsubscribe request"
    assert thread.mailbox_id == sent.mailbox_id and thread.lead_id == sent.leads[ann]
    assert took < 5.0

    await drop.append(dsn(sent.received[bob], "5.1.1", "550 5.1.1 <bob@bob-corp.example>: user unknown"))

    async def two_threads() -> bool:
        return len(await threads_of(ws)) == 2

    await until(two_threads, what="the bounce thread")
    bounce = [t for t in await threads_of(ws) if t.kind == "bounce"]
    assert [t.label_name for t in bounce] == ["Bounce"]
    [cl_bob] = [
        r
        for r in await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
        if r.lead_id == sent.leads[bob]
    ]
    assert cl_bob.status == "bounced"

    # a restart reads from the checkpoint: nothing is recorded twice
    await workers.stop(sup)
    second = Recorder()
    sup2 = workers.start(rt, second, [ws.workspace_id], holder="e2e-2")
    await until(lambda: sup2.synced.is_set(), what="a sync after the restart")
    messages = await messages_of(ws)
    assert len(messages) == 2 and len(await threads_of(ws)) == 2
    assert sorted(m.uid for m in messages) == [1, 2]
