"""The warmup pool end to end, on real servers: aiosmtpd receives what each mailbox sends (the wire bytes),
Dovecot holds each recipient's folders (a delivery bridge puts the email in INBOX, or in Junk for the
recipients filtering it as spam), the warmup worker's pass sends, finds, moves, flags and answers."""

from __future__ import annotations

import email
import email.policy
from datetime import UTC, datetime

import httpx

from outreach_core.inbox.pipeline import Fetched, FolderBatch, prepare, record_batch
from outreach_core.kernel.db.tables import warmup_mailboxes
from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from outreach_core.warmup.pipeline import warmup_pass
from outreach_core.warmup.rules import HEADER
from tests.conftest import MakeWorkspace
from tests.imap_client import Maildrop
from tests.mail_servers import MailServers
from tests.mailboxes.helpers import API
from tests.warmup.helpers import Bridge, messages_rows, pool_mailbox, set_rows, warmup_runtime


async def _enable(http: httpx.AsyncClient, ws: object, mailbox_id: str, **warmup: object) -> None:
    body = {"warmup": {"enabled": True, **warmup}}
    response = await http.patch(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json=body)  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text


async def test_two_workspaces_exchange_warmup_emails_spam_is_moved_and_answered(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    runtime: Runtime,
    mail_servers: MailServers,
    bridge: Bridge,
) -> None:
    a, b = await make_workspace(), await make_workspace()
    a_id, a_email, a_password = await pool_mailbox(a, mail_servers)
    b_id, b_email, b_password = await pool_mailbox(b, mail_servers)
    bridge.spam_for.add(b_email)  # b's provider files a's email as spam
    await _enable(http, a, a_id, replyRate=0)
    await _enable(http, b, b_id, replyRate=100)
    clock = FixedClock(datetime.now(UTC))
    rt = warmup_runtime(runtime, clock, warmup_tend_after_s=30.0)

    await warmup_pass(rt)  # plans the day: the first sends are spread over the next minutes
    clock.advance(minutes=11)
    sent = await warmup_pass(rt)
    assert sent >= 2  # each mailbox sent one warmup email, to the other

    to_b = bridge.to(b_email)
    assert len(to_b) == 1 and to_b[0].mail_from == a_email
    wire = email.message_from_bytes(to_b[0].data, policy=email.policy.SMTP)
    token = wire[HEADER]
    assert token and token.startswith("wu1-")
    text = wire.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "http" not in text.lower() and "<a" not in text and wire.get_content_type() == "text/plain"
    b_box = Maildrop(mail_servers, b_email, b_password)
    assert len(await b_box.messages("Junk")) == 1, bridge.errors

    # the next pass looks into the recipients' folders: b's copy leaves Junk for INBOX, read and flagged
    clock.advance(minutes=1)
    await warmup_pass(rt)
    assert await b_box.messages("Junk") == []
    inbox = await b_box.messages("INBOX")
    assert len(inbox) == 1
    flags, raw = inbox[0]
    assert {"\\Seen", "\\Flagged"} <= flags and token.encode() in raw
    a_inbox = await Maildrop(mail_servers, a_email, a_password).messages("INBOX")
    assert len(a_inbox) == 1 and {"\\Seen", "\\Flagged"} <= a_inbox[0][0]
    rows = {r.token: r for r in await messages_rows(runtime)}
    assert rows[token].landed == "spam"  # where it landed, before it was moved
    assert rows[token].reply == "wanted"  # b answers everything (replyRate 100)

    # b answers a's email in the thread; a never answers (replyRate 0)
    for _ in range(30):  # b's next warmup email is spread over the rest of its day
        clock.advance(hours=1)
        await warmup_pass(rt)
        replies = [r for r in bridge.to(a_email) if b"In-Reply-To" in r.data]
        if replies:
            break
    assert len(replies) == 1
    reply = email.message_from_bytes(replies[0].data, policy=email.policy.SMTP)
    assert reply["In-Reply-To"] == wire["Message-ID"] and reply["Subject"] == f"Re: {wire['Subject']}"
    assert reply[HEADER] and reply[HEADER] != token

    # what each workspace sees through the API: its own numbers, never the other's address
    shown_a = (await http.get(f"{API}/mailboxes", headers=a.headers)).text
    shown_b = (await http.get(f"{API}/mailboxes", headers=b.headers)).text
    assert b_email not in shown_a and a_email not in shown_b
    for ws, mailbox_id in ((a, a_id), (b, b_id)):
        shown = (await http.get(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)).json()
        # warmup counts in the mailbox's own daily sends (nothing else sent from it)
        assert shown["sentToday"] == shown["warmup"]["sentToday"]
        assert shown["warmup"]["sentToday"] <= shown["warmup"]["targetToday"]
    assert not [r for r in bridge.to(b_email) if b"In-Reply-To" in r.data]  # a answers nothing

    # the inbox worker leaves warmup emails out: no thread, nothing counted
    batch = FolderBatch(
        b.workspace_id, b_id, "INBOX", "inbox", 1, 1, [Fetched(1, clock.now(), len(raw), raw)]
    )
    assert prepare(batch) == []
    assert await rt.system(record_batch, batch) == 0
    threads = (await http.get(f"{API}/threads", headers=b.headers)).json()
    assert threads["total"] == 0


async def test_recipients_that_bounce_leave_the_pool(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    runtime: Runtime,
    mail_servers: MailServers,
    bridge: Bridge,
) -> None:
    a, b = await make_workspace(), await make_workspace()
    a_id, a_email, _ = await pool_mailbox(a, mail_servers)
    b_id, b_email, _ = await pool_mailbox(b, mail_servers)
    server = mail_servers.smtp["starttls"]
    server.rcpt_reply = lambda address: "550 5.1.1 no such user" if address == b_email else None
    await _enable(http, a, a_id)
    await _enable(http, b, b_id)
    clock = FixedClock(datetime.now(UTC))
    rt = warmup_runtime(runtime, clock)
    await warmup_pass(rt)
    clock.advance(minutes=11)
    await warmup_pass(rt)
    shown_b = (await http.get(f"{API}/mailboxes/{b_id}", headers=b.headers)).json()["warmup"]
    assert shown_b["reason"] is not None and "bounced" in shown_b["reason"] and "550" in shown_b["reason"]
    assert a_email not in shown_b["reason"]
    # the pool is a of one now: a waits and says why
    clock.advance(hours=1)
    await warmup_pass(rt)
    shown_a = (await http.get(f"{API}/mailboxes/{a_id}", headers=a.headers)).json()["warmup"]
    assert "pool needs at least two" in (shown_a["reason"] or "")
    assert len(bridge.to(b_email)) == 0
    # turning warmup on again puts b back
    await _enable(http, b, b_id)
    assert (await http.get(f"{API}/mailboxes/{b_id}", headers=b.headers)).json()["warmup"]["reason"] is None
    await set_rows(runtime, warmup_mailboxes, warmup_mailboxes.c.mailbox_id == b_id, removed=False)
