"""`reply_to_thread`: a person's answer in a thread, sent through the thread's mailbox.

Three steps, no transaction open during network I/O (docs/inbox.md#replying-from-a-thread):

1. `plan_reply` (a short read transaction): the thread, its mailbox, the lead, the threading headers
   (`In-Reply-To` the last received message's Message-ID, `References` the conversation's Message-IDs) and
   the email itself (`mail/message.py` builds it);
2. `prepare_reply_to_thread` (no transaction): the SMTP hand-off; a refusal is the error 409
   `delivery_failed` and nothing is recorded; then the copy to the Sent folder over IMAP, whose failure
   only shows in `sentFolder`;
3. `reply_to_thread` (one transaction): the reply is recorded in the thread (`inbox_messages`, `out`,
   kind and source `manual`), which becomes read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from outreach_core.inbox.schemas import ReplyIn, ReplySent
from outreach_core.inbox.threads import (
    arrival_order,
    ledger_rows,
    message_item,
    message_rows,
    thread_row,
    who_acts,
)
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.crypto import UndecryptableSecret
from outreach_core.kernel.db.tables import inbox_messages, leads, mailboxes, suppressions, threads
from outreach_core.kernel.endpoint import Outside
from outreach_core.kernel.errors import DeliveryFailed, InvalidInput, InvalidState
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.ports import MailServer
from outreach_core.mail.message import (
    Outgoing,
    UnsafeHeader,
    build_message,
    new_message_id,
    reply_subject,
    to_bytes,
)
from outreach_core.mail.plaintext import html_to_text
from outreach_core.mail.sanitize import clean_html, header_safe, looks_like_html, plain_text_to_html
from outreach_core.mail.sanitize import sanitize_body as sanitize
from outreach_core.mailboxes.oauth_tokens import LoginUnavailable, login_for
from outreach_core.mailboxes.routes import proxy_urls

MAX_REFERENCES = 20
"""`References` keeps the first Message-ID and the latest ones up to this many (RFC 5322 3.6.4 allows
trimming; mail clients thread on the first and the last)."""


@dataclass(frozen=True)
class ReplyPlan:
    """Everything the hand-off needs, read in one short transaction."""

    thread_id: str
    smtp: MailServer
    imap: MailServer
    password_encrypted: str
    email: Outgoing
    mailbox_id: str = ""
    oauth_encrypted: str | None = None  # an OAuth mailbox's tokens (mailboxes/oauth_tokens.py)


@dataclass(frozen=True)
class Handed:
    """What `prepare_reply_to_thread` did: the email sent, when, and what happened to its Sent copy."""

    plan: ReplyPlan
    sent_at: datetime
    sent_folder: str


def reply_body(body: str, signature: str | None) -> tuple[str, str]:
    """The reply's HTML (sanitized, the mailbox's signature below it) and its plain-text part."""
    html = sanitize(body)
    if not html_to_text(html).strip():
        raise InvalidInput.field("body", "the reply is empty once sanitized (no text left)")
    if signature and signature.strip():
        sig = sanitize(signature) if looks_like_html(signature) else clean_html(plain_text_to_html(signature))
        html = f"{html}<br><div>{sig}</div>" if html else f"<div>{sig}</div>"
    return html, html_to_text(html)


def threading(chain: list[str], in_reply_to: str | None) -> tuple[str | None, tuple[str, ...]]:
    """(`In-Reply-To`, `References`) from the conversation's Message-IDs (oldest first)."""
    ids = list(dict.fromkeys(m for m in chain if m))
    target = in_reply_to or (ids[-1] if ids else None)
    if target is None:
        return None, ()
    if target in ids:
        ids.remove(target)
    ids.append(target)  # References ends with the message answered
    if len(ids) > MAX_REFERENCES:
        ids = [ids[0], *ids[-(MAX_REFERENCES - 1) :]]
    return target, tuple(ids)


async def plan_reply(ctx: WorkspaceContext, id: str, body: ReplyIn) -> ReplyPlan:
    """Read the thread and build the email (a short read-only transaction)."""
    row = await thread_row(ctx, id)
    box = None
    if row.mailbox_id is not None:
        found = await ctx.conn.execute(
            scoped(ctx, mailboxes).select().where(mailboxes.c.id == row.mailbox_id)
        )
        box = found.one_or_none()
    if box is None:
        raise InvalidState(
            "The thread's mailbox was deleted: a reply cannot be sent from it.", {"threadId": id}
        )
    if box.sending_route == "waiting":
        raise InvalidState(
            "The thread's mailbox is waiting for a sending IP with room: nothing is sent from it until it "
            "has one.",
            {"threadId": id, "mailboxId": box.id},
        )
    lead = (
        await ctx.conn.execute(
            scoped(ctx, leads)
            .select(leads.c.email, leads.c.domain, leads.c.status)
            .where(leads.c.id == row.lead_id)
        )
    ).one()
    refused = await refusal(ctx, row, lead)
    if refused is not None:
        raise refused
    conversation = arrival_order(await ledger_rows(ctx, row), await message_rows(ctx, id))
    chain = [item.message_id for _, item in conversation if item.message_id]
    received = [m.message_id for is_sent, m in conversation if not is_sent and m.direction == "in"]
    in_reply_to, references = threading(chain, next((m for m in reversed(received) if m), None))
    html, text = reply_body(body.body, box.signature)
    email = Outgoing(
        from_email=box.email,
        from_name=box.display_name,
        to_email=lead.email,
        subject=header_safe(body.subject or "").strip() or reply_subject(row.subject),
        html=html,
        text=text,
        message_id=new_message_id(box.domain),
        date=ctx.now,
        unsubscribe_url=None,
        in_reply_to=in_reply_to,
        references=references,
    )
    return ReplyPlan(
        thread_id=id,
        smtp=MailServer(
            box.smtp_host,
            box.smtp_port,
            box.smtp_security,
            box.smtp_user,
            (await proxy_urls(ctx, {box.sending_ip_id} if box.sending_ip_id else set())).get(
                box.sending_ip_id
            ),
        ),
        imap=MailServer(box.imap_host, box.imap_port, box.imap_security, box.imap_user),
        password_encrypted=box.password_encrypted,
        email=email,
        mailbox_id=box.id,
        oauth_encrypted=box.oauth_encrypted,
    )


async def refusal(ctx: WorkspaceContext, thread: Any, lead: Any) -> InvalidState | None:
    """Why the lead may not be emailed, naming the real cause (the sender's rules, `sending/rules.py`): it
    unsubscribed, it bounced, its address or its domain is on the suppression list (with the entry's
    reason). None when a reply may go out."""
    entries = (
        await ctx.conn.execute(
            scoped(ctx, suppressions)
            .select(suppressions.c.value, suppressions.c.reason)
            .where(suppressions.c.value.in_([lead.email, lead.domain]))
        )
    ).all()
    address = next((e for e in entries if e.value == lead.email), None)
    domain = next((e for e in entries if e.value != lead.email), None)
    details: dict[str, Any] = {"leadId": thread.lead_id, "status": lead.status}
    if lead.status == "unsubscribed" or (address is not None and address.reason == "unsubscribed"):
        return InvalidState(
            f"{lead.email} unsubscribed: the service never emails it again.",
            details | {"cause": "unsubscribed"},
        )
    if lead.status == "bounced" or (address is not None and address.reason == "bounced"):
        bounce = await _last_bounce(ctx, thread.id)
        why = f" ({bounce})" if bounce else ""
        return InvalidState(
            f"Email to {lead.email} bounced{why}: the address cannot receive mail, so the service never "
            "emails it again.",
            details | {"cause": "bounced"},
        )
    if address is not None:
        return InvalidState(
            f"{lead.email} is on the suppression list{_reason(address.reason)}: the service never emails it.",
            details | {"cause": "suppressed", "reason": address.reason},
        )
    if domain is not None:
        return InvalidState(
            f"The domain {lead.domain} is on the suppression list{_reason(domain.reason)}: the service never "
            f"emails {lead.email}.",
            details | {"cause": "domain_suppressed", "reason": domain.reason},
        )
    if lead.status == "suppressed":  # an entry removed meanwhile restores the status; kept as the sender does
        return InvalidState(
            f"{lead.email} is suppressed: the service never emails it.", details | {"cause": "suppressed"}
        )
    return None


def _reason(reason: str | None) -> str:
    return f" (reason: {reason})" if reason else ""


async def _last_bounce(ctx: WorkspaceContext, thread_id: str) -> str | None:
    """The thread's latest hard bounce as "5.1.1 user unknown", if it holds one."""
    found = (
        await ctx.conn.execute(
            scoped(ctx, inbox_messages)
            .select(inbox_messages.c.bounce)
            .where(inbox_messages.c.thread_id == thread_id, inbox_messages.c.kind == "bounce")
            .order_by(inbox_messages.c.arrived_at.desc(), inbox_messages.c.id.desc())
        )
    ).scalars()
    for bounce in found:
        if bounce and bounce.get("hard"):
            return " ".join(str(x) for x in (bounce.get("status"), bounce.get("reason")) if x) or None
    return None


async def prepare_reply_to_thread(outside: Outside, id: str, body: ReplyIn) -> Handed:
    """The hand-off and the Sent copy, with no transaction open."""
    plan = await outside.read(plan_reply, id, body)
    try:
        smtp_server, password = await login_for(
            outside.settings,
            outside.ports.oauth,
            outside.now(),
            plan.mailbox_id,
            plan.smtp,
            plan.password_encrypted,
            plan.oauth_encrypted,
        )
    except UndecryptableSecret:
        raise DeliveryFailed(
            "The mailbox's stored password cannot be decrypted with the server's keys; send it again "
            "(update_mailbox)."
        ) from None
    except LoginUnavailable as exc:
        raise DeliveryFailed(f"{exc.reason[:1].upper()}{exc.reason[1:]}. Nothing was sent.") from None
    imap_server = replace(plan.imap, auth=smtp_server.auth)
    try:
        message = to_bytes(build_message(plan.email))
    except UnsafeHeader as exc:
        if exc.mailbox:
            raise DeliveryFailed(f"The reply cannot be built: {exc.reason}.") from None
        raise InvalidInput.field("subject", f"the reply cannot be built: {exc.reason}") from None
    smtp = outside.ports.smtp
    if smtp is None:
        raise RuntimeError("no SMTP client is configured (Ports.smtp): replies cannot be sent")
    delivery = await smtp.send(smtp_server, password, plan.email.from_email, plan.email.to_email, message)
    if not delivery.ok:
        raise DeliveryFailed(
            f"The mailbox's SMTP server did not take the reply ({delivery.phase}): {delivery.reason}. "
            "Nothing was sent or recorded.",
            {"phase": delivery.phase, "smtpCode": delivery.code, "reason": delivery.reason},
        )
    sent_at = outside.now()
    imap = outside.ports.imap
    if imap is None:
        sent_folder = "not appended: no IMAP client is configured on this server"
    else:
        problem = await imap.append_sent(imap_server, password, message, sent_at)
        sent_folder = "appended" if problem is None else f"not appended: {problem}"
    return Handed(plan=plan, sent_at=sent_at, sent_folder=sent_folder)


async def reply_to_thread(ctx: WorkspaceContext, id: str, body: ReplyIn, prepared: Handed) -> ReplySent:
    """Answer the lead in a thread: the email goes out through the thread's mailbox (its SMTP server), as a
    reply to the lead's last message (`In-Reply-To`, `References`), with the subject `Re: <thread
    subject>` unless `subject` is given and the mailbox's signature below the body. It is recorded in the
    thread (which becomes read) and a copy is stored in the mailbox's Sent folder where the IMAP server
    allows (`sentFolder` says `appended`, or why not). If the SMTP server refuses, the answer is the error
    `delivery_failed` and nothing is recorded. A lead that unsubscribed or bounced, or whose address or domain
    is suppressed, is never emailed: the error `invalid_state` names which (`details.cause`)."""
    email = prepared.plan.email
    row = await thread_row(ctx, id)
    message_id = new_id("msg")
    await ctx.conn.execute(
        scoped(ctx, inbox_messages).insert(
            {
                "id": message_id,
                "thread_id": id,
                "mailbox_id": row.mailbox_id,
                "direction": "out",
                "message_id": email.message_id,
                "kind": "manual",
                "from_email": email.from_email,
                "from_name": email.from_name,
                "to_emails": [email.to_email],
                "subject": email.subject,
                "text": email.text,
                "html": email.html,
                "source": "manual",
                "reason": f"sent by {await who_acts(ctx)}",
                "arrived_at": prepared.sent_at,
                "created_at": ctx.now,
            }
        )
    )
    await ctx.conn.execute(
        scoped(ctx, threads)
        .update()
        .where(threads.c.id == id)
        .values(
            message_count=threads.c.message_count + 1,
            last_message_at=max(row.last_message_at, prepared.sent_at),
            unread=False,
        )
    )
    stored = (
        await ctx.conn.execute(scoped(ctx, inbox_messages).select().where(inbox_messages.c.id == message_id))
    ).one()
    return ReplySent(
        message=message_item(stored), message_id=email.message_id, sent_folder=prepared.sent_folder
    )
