"""Helpers for the ingest tests: a campaign really sent by the sender worker to aiosmtpd, the messages a
lead's mail client would write back to what it received, and folder batches of them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, make_msgid
from typing import Any

import httpx
from sqlalchemy import select

from outreach_core.inbox.pipeline import Fetched, FolderBatch, ingest_batch
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import inbox_messages, labels, leads, threads
from tests.conftest import WorkspaceHandle
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, received_by, smtp_mailbox
from workers import sender

_uids = itertools.count(1000)


@dataclass
class Sent:
    ws: WorkspaceHandle
    mailbox_id: str
    mailbox_email: str
    campaign_id: str
    leads: dict[str, str]  # email -> lead id
    received: dict[str, EmailMessage]  # email -> the first email as the lead's server received it


async def sent_campaign(
    http: httpx.AsyncClient,
    ws: WorkspaceHandle,
    server: SmtpServer,
    users: Users,
    emails: list[str],
    lead_fields: dict[str, dict[str, Any]] | None = None,
    **settings: Any,
) -> Sent:
    """A campaign launched and sent (first step) by the real sender worker to `emails` through `server`."""
    box = await smtp_mailbox(ws, server, users)
    ids = {e: await add_lead(ws, e, **(lead_fields or {}).get(e, {})) for e in emails}
    cid = await launched_campaign(http, ws, [box], list(ids.values()), **settings)
    for _ in range(len(emails)):
        await sender.tick(ws.runtime)
        if all(received_by(server, e) for e in emails):
            break
        await _due_now(ws, box)
    received = {e: received_by(server, e)[-1] for e in emails}
    address = str(received[emails[0]]["From"].addresses[0].addr_spec)
    return Sent(ws, box, address, cid, ids, received)


async def _due_now(ws: WorkspaceHandle, box: str) -> None:
    from tests.sending.helpers import update_rows

    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)


def reply_to(
    original: EmailMessage,
    text: str,
    *,
    sender: str | None = None,
    subject: str | None = None,
    headers: dict[str, str] | None = None,
    in_reply_to: str | None = None,
) -> bytes:
    """What a mail client writes when the lead answers `original`: threaded on its Message-ID, the
    original quoted below an attribution line."""
    msg = EmailMessage(policy=SMTP)
    to = original["To"].addresses[0].addr_spec
    msg["From"] = sender or f"Lead Person <{to}>"
    msg["To"] = str(original["From"])
    msg["Subject"] = subject if subject is not None else f"Re: {original['Subject']}"
    msg["Date"] = format_datetime(datetime.now(UTC))
    msg["Message-ID"] = make_msgid(domain="client.lead.example")
    parent = in_reply_to or str(original["Message-ID"])
    msg["In-Reply-To"] = parent
    msg["References"] = " ".join(x for x in (original.get("References"), parent) if x)
    for name, value in (headers or {}).items():
        msg[name] = value
    body = original.get_body(("plain",))
    quoted = "\n".join(f"> {line}" for line in (body.get_content() if body else "").splitlines())
    written = original["Date"].datetime if original["Date"] else datetime.now(UTC)
    on = f"{format_datetime(written)[:16]} at {written:%H:%M}"  # Mon, 23 Nov 2026 at 10:00
    msg.set_content(f"{text}\n\nOn {on}, Sam Sender wrote:\n{quoted}\n")
    return msg.as_bytes(policy=SMTP)


def dsn(original: EmailMessage, status: str, diagnostic: str, *, action: str = "failed") -> bytes:
    """An RFC 3464 delivery status notification for `original`, as Postfix writes one."""
    rcpt = original["To"].addresses[0].addr_spec
    ours = original["From"].addresses[0].addr_spec
    returned = "".join(
        f"{k}: {v}\n"
        for k, v in original.items()
        if k.lower() in ("from", "to", "subject", "message-id", "date")
    )
    text = f"""From: Mail Delivery System <MAILER-DAEMON@mx.lead.example>
To: {ours}
Subject: Undelivered Mail Returned to Sender
Message-ID: {make_msgid(domain="mx.lead.example")}
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="BOUNDARY-1"

--BOUNDARY-1
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.lead.example.

I'm sorry to have to inform you that your message could not be delivered to {rcpt}.

--BOUNDARY-1
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.lead.example

Final-Recipient: rfc822; {rcpt}
Original-Recipient: rfc822;{rcpt}
Action: {action}
Status: {status}
Diagnostic-Code: smtp; {diagnostic}

--BOUNDARY-1
Content-Type: text/rfc822-headers

{returned}
--BOUNDARY-1--
"""
    return text.replace("\n", "\r\n").encode()


def fetched(raw: bytes, *, uid: int | None = None, at: datetime | None = None) -> Fetched:
    return Fetched(uid=uid or next(_uids), arrived_at=at or datetime.now(UTC), size=len(raw), raw=raw)


def batch(sent: Sent, *messages: Fetched, uidvalidity: int = 7, folder: str = "INBOX") -> FolderBatch:
    return FolderBatch(
        workspace_id=sent.ws.workspace_id,
        mailbox_id=sent.mailbox_id,
        folder=folder,
        role="inbox",
        uidvalidity=uidvalidity,
        last_uid=max((m.uid for m in messages), default=0),
        messages=messages,
    )


async def ingest(sent: Sent, *messages: Fetched, **options: Any) -> int:
    return await ingest_batch(sent.ws.runtime, batch(sent, *messages, **options))


async def read(ws: WorkspaceHandle, stmt_for: Any) -> list[Any]:
    async def run(ctx: WorkspaceContext) -> list[Any]:
        return list((await ctx.conn.execute(stmt_for(ctx))).all())

    return await ws.runtime.read(await ws.principal(), run)


async def threads_of(ws: WorkspaceHandle) -> list[Any]:
    return await read(
        ws,
        lambda ctx: (
            scoped(ctx, threads)
            .select(threads, labels.c.name.label("label_name"))
            .outerjoin(labels, labels.c.id == threads.c.label_id)
            .order_by(threads.c.created_at)
        ),
    )


async def messages_of(ws: WorkspaceHandle, thread_id: str | None = None) -> list[Any]:
    def stmt(ctx: WorkspaceContext) -> Any:
        s = scoped(ctx, inbox_messages).select().order_by(inbox_messages.c.arrived_at, inbox_messages.c.id)
        return s if thread_id is None else s.where(inbox_messages.c.thread_id == thread_id)

    return await read(ws, stmt)


async def lead_row(ws: WorkspaceHandle, lead_id: str) -> Any:
    [row] = await read(ws, lambda ctx: scoped(ctx, leads).select().where(leads.c.id == lead_id))
    return row


async def builtin_id(ws: WorkspaceHandle, key: str) -> str:
    [row] = await read(
        ws,
        lambda ctx: select(labels.c.id).where(
            labels.c.workspace_id == ctx.workspace_id, labels.c.builtin == key
        ),
    )
    return str(row.id)
