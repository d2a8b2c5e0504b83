"""End to end: the sender worker really sends a campaign over SMTP, the lead's answers land in the mailbox on
Dovecot (APPENDed as a delivery agent would), and the inbox worker turns them into labelled threads."""

from __future__ import annotations

import email
import email.policy
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from email.message import EmailMessage

import httpx

from outreach_core.kernel.crypto import decrypt
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.imap_client import Maildrop
from tests.inbox.ingest import dsn, messages_of, reply_to, sent_campaign, threads_of
from tests.inbox_worker.helpers import Recorder, Workers, mailbox_row, until
from tests.mail_servers import MailServers
from tests.sending.helpers import rows, update_rows

API = "/api/v1"


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


async def test_an_answer_in_the_same_second_as_what_it_answers_is_listed_after_it(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    http: httpx.AsyncClient,
) -> None:
    rt = make_runtime(inbox_poll_s=60.0)
    ws = await make_workspace()
    ann, bob = "ann.order@order-corp.example", "bob.order@order-corp2.example"
    smtp = mail_servers.smtp["starttls"]
    sent = await sent_campaign(http, ws, smtp, mail_servers.users, [ann, bob])
    imap = mail_servers.imap_settings(sent.mailbox_email, "tls")
    await update_rows(
        ws, "mailboxes", {"imap_host": imap["host"], "imap_port": imap["port"]}, id=sent.mailbox_id
    )
    row = await mailbox_row(rt, sent.mailbox_id)
    drop = Maildrop(mail_servers, row.imap_user, decrypt(rt.settings, row.password_encrypted))
    ledger = {s.to_email: s for s in await rows(ws, "sends", campaign_id=sent.campaign_id)}

    # a reply and a bounce delivered in the second each email was sent: INTERNALDATE has whole seconds, so
    # each is dated up to a second before the email it answers
    await drop.append(reply_to(sent.received[ann], "Interesting, tell me more."), when=ledger[ann].sent_at)
    bounce = dsn(sent.received[bob], "5.1.1", f"550 5.1.1 <{bob}>: user unknown")
    await drop.append(bounce, when=ledger[bob].sent_at)
    workers.start(rt, Recorder(), [ws.workspace_id], holder="order-1")

    async def listed() -> dict[str, str]:
        page = (await http.get(f"{API}/threads", headers=ws.headers)).json()
        return {t["lead"]["email"]: t["id"] for t in page["threads"]}

    async def conversation(address: str) -> list[tuple[str, str]]:
        thread = (await http.get(f"{API}/threads/{(await listed())[address]}", headers=ws.headers)).json()
        return [(m["direction"], m["kind"]) for m in thread["messages"]]

    await until(lambda: two(listed), what="both threads")
    assert await conversation(ann) == [("out", "campaign"), ("in", "reply")]
    assert await conversation(bob) == [("out", "campaign"), ("in", "bounce")]

    # our answer from the thread, and the lead's auto-reply to it delivered in the same second
    answered = await http.post(
        f"{API}/threads/{(await listed())[ann]}/reply", headers=ws.headers, json={"body": "Sure: Tuesday?"}
    )
    assert answered.status_code == 200, answered.text
    at = datetime.fromisoformat(answered.json()["message"]["at"])
    with smtp.lock:
        ours = [m.data for m in smtp.messages if ann in m.rcpt_tos][-1]
    on_the_wire = email.message_from_bytes(ours, policy=email.policy.default)
    assert isinstance(on_the_wire, EmailMessage)
    auto = reply_to(
        on_the_wire, "I am out of the office until Monday.", headers={"Auto-Submitted": "auto-replied"}
    )
    await drop.append(auto, when=at)

    async def answered_back() -> bool:
        return len(await conversation(ann)) == 4

    await until(answered_back, what="the auto-reply in the thread")
    assert await conversation(ann) == [
        ("out", "campaign"), ("in", "reply"), ("out", "manual"), ("in", "out_of_office")
    ]  # fmt: skip


async def two(listed: Callable[[], Awaitable[dict[str, str]]]) -> bool:
    return len(await listed()) == 2
