"""A warmup email that bounces after its hand-off: the bounce report arrives in the sender's mailbox, the
inbox worker's recording leaves it out (no thread) and takes the recipient out of the pool."""

from __future__ import annotations

import datetime as dt
import email
import email.policy

import httpx

from outreach_core.inbox.pipeline import Fetched, FolderBatch, record_batch
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import warmup_messages
from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from outreach_core.mailboxes.operations import update_mailbox
from outreach_core.mailboxes.schemas import UpdateMailboxIn, WarmupIn
from outreach_core.warmup.message import WarmupEmail, new_message_id, to_bytes
from outreach_core.warmup.rules import new_token
from tests.conftest import MakeWorkspace
from tests.mailboxes.helpers import API, seed_mailbox
from tests.warmup.helpers import messages_rows, warmup_runtime


def _dsn(original: bytes, sender: str, rcpt: str) -> bytes:
    headers = original.split(b"\r\n\r\n", 1)[0].decode()
    text = f"""From: Mail Delivery System <MAILER-DAEMON@mx.gone.example>
To: {sender}
Subject: Undelivered Mail Returned to Sender
Message-ID: <dsn-{new_token()}@mx.gone.example>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B1"

--B1
Content-Type: text/plain; charset=us-ascii

Your message could not be delivered to {rcpt}.

--B1
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.gone.example

Final-Recipient: rfc822; {rcpt}
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 mailbox unavailable

--B1
Content-Type: text/rfc822-headers

{headers}

--B1--
"""
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode()


async def test_a_bounce_report_of_a_warmup_email_removes_the_recipient_and_makes_no_thread(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    a, b = await make_workspace(), await make_workspace()
    clock = FixedClock(dt.datetime.now(dt.UTC))
    rt = warmup_runtime(runtime, clock)
    a_id = await seed_mailbox(a, "bounce-sender@mail.test")
    b_id = await seed_mailbox(b, "bounce-gone@gone.example")
    for ws, mailbox_id in ((a, a_id), (b, b_id)):
        body = UpdateMailboxIn(warmup=WarmupIn(enabled=True))
        await rt.execute(await ws.principal(), update_mailbox, mailbox_id, body=body, prepared=None)
    token = new_token()
    warm = WarmupEmail(
        from_email="bounce-sender@mail.test",
        from_name=None,
        to_email="bounce-gone@gone.example",
        subject="Lunch on Friday?",
        text="Hi,\n\nLunch?\n",
        message_id=new_message_id("bounce-sender@mail.test"),
        token=token,
        date=clock.now(),
    )
    original = to_bytes(warm)

    async def sent(ctx: SystemContext) -> None:
        row = {
            "id": "wmsg_bounce1",
            "token": token,
            "from_mailbox_id": a_id,
            "to_mailbox_id": b_id,
            "reply_to_id": None,
            "message_id": warm.message_id,
            "subject": warm.subject,
            "status": "sent",
            "sent_at": ctx.now,
            "landed": None,
            "landed_at": None,
            "reply": None,
        }
        await ctx.conn.execute(system_scope(warmup_messages).insert(row))

    await rt.system(sent)
    report = _dsn(original, "bounce-sender@mail.test", "bounce-gone@gone.example")
    assert email.message_from_bytes(report, policy=email.policy.SMTP).get_content_type() == "multipart/report"
    batch = FolderBatch(
        a.workspace_id, a_id, "INBOX", "inbox", 7, 1, [Fetched(1, clock.now(), len(report), report)]
    )
    assert await rt.system(record_batch, batch) == 0  # nothing recorded as a message or thread

    assert [(r.token, r.status) for r in await messages_rows(runtime)] == [(token, "bounced")]
    shown = (await http.get(f"{API}/mailboxes/{b_id}", headers=b.headers)).json()["warmup"]
    assert shown["enabled"] is True and "bounced" in (shown["reason"] or "")
    assert (await http.get(f"{API}/threads", headers=a.headers)).json()["total"] == 0
    assert "bounce-gone" not in (await http.get(f"{API}/mailboxes", headers=a.headers)).text
