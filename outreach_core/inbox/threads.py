"""Reply threads: list, open and change them (label, unread). Replying is `thread_reply.py`.

A thread is one conversation with a lead through one mailbox (and the campaign whose email the lead
answered). Its messages are the campaign's emails to the lead from the send ledger (`out`, kind
`campaign`) and the rows of `inbox_messages` (`in`, and `out` for replies sent from the thread). Every
member may read and change threads (docs/inbox.md#threads); another workspace's thread is 404.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, func

from outreach_core.events.data import lead_event_data
from outreach_core.events.outbox import record_event
from outreach_core.inbox.schemas import (
    Bounce,
    ListThreadsQuery,
    Thread,
    ThreadDetail,
    ThreadLabel,
    ThreadLead,
    ThreadMessage,
    ThreadPage,
    UpdateThreadIn,
)
from outreach_core.inbox.thread_labels import label_thread_leads, labeled_data
from outreach_core.kernel.context import WorkspaceContext, scoped, unscoped
from outreach_core.kernel.db.tables import (
    campaign_leads,
    inbox_messages,
    labels,
    leads,
    mailboxes,
    sends,
    threads,
    users,
)
from outreach_core.kernel.errors import NotFound
from outreach_core.kernel.rollups import sync_replies
from outreach_core.labels.store import label_row

NO_LABEL = "none"
LEDGER_SENT = ("sent", "bounced")
"""Ledger rows shown in a thread: emails the server accepted (a later bounce keeps them shown). Sends still
in flight, refused, retried or lost in a crash (`unknown`) are not part of the conversation."""

t = threads


def _thread_select(ctx: WorkspaceContext) -> Select[Any]:
    """Threads with their lead and label, in one query (no look-up per row)."""
    return (
        scoped(ctx, threads)
        .select(
            t.c.id,
            t.c.lead_id,
            t.c.campaign_id,
            t.c.mailbox_id,
            t.c.subject,
            t.c.kind,
            t.c.label_id,
            t.c.label_source,
            t.c.label_reason,
            t.c.last_message_at,
            t.c.unread,
            t.c.message_count,
            leads.c.email.label("lead_email"),
            leads.c.first_name,
            leads.c.last_name,
            labels.c.name.label("label_name"),
            labels.c.type.label("label_type"),
        )
        .select_from(t.join(leads, leads.c.id == t.c.lead_id).outerjoin(labels, labels.c.id == t.c.label_id))
    )


def _conditions(query: ListThreadsQuery) -> list[ColumnElement[bool]]:
    found: list[ColumnElement[bool]] = []
    if query.label_id == NO_LABEL:
        found.append(t.c.label_id.is_(None))
    elif query.label_id is not None:
        found.append(t.c.label_id == query.label_id)
    if query.campaign_id is not None:
        found.append(t.c.campaign_id == query.campaign_id)
    if query.mailbox_id is not None:
        found.append(t.c.mailbox_id == query.mailbox_id)
    if query.lead_id is not None:
        found.append(t.c.lead_id == query.lead_id)
    if query.kind:
        found.append(t.c.kind.in_(sorted(set(query.kind))))
    if query.unread is not None:
        found.append(t.c.unread == query.unread)
    needle = (query.search or "").strip().lower()
    if needle:
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found.append(t.c.search_text.like(f"%{escaped}%", escape="\\"))
    return found


async def list_threads(ctx: WorkspaceContext, query: ListThreadsQuery) -> ThreadPage:
    """List reply threads (conversations with leads: replies, auto-replies, out-of-office notes, bounces,
    unsubscribe requests), newest message first. Filter by `labelId` (or `none` for unlabelled),
    `campaignId`, `mailboxId`, `leadId`, `kind` (any of reply, auto_reply, out_of_office, bounce,
    unsubscribe_request), `unread`, and `search` (part of the lead's email or name, or of the subject);
    page with `page` and `pageSize`. Open one with `get_thread` to read its messages."""
    conditions = _conditions(query)
    total = (
        await ctx.conn.execute(scoped(ctx, threads).select(func.count()).where(*conditions))
    ).scalar_one()
    newest: Any = t.c.last_message_at
    if query.lead_id is not None:
        # A lead has a handful of threads: read them through the lead's index and sort them. Ordering by an
        # expression keeps SQLite's planner from walking the workspace's threads newest first instead.
        newest = func.coalesce(t.c.last_message_at, t.c.last_message_at)
    page = (
        _thread_select(ctx)
        .where(*conditions)
        .order_by(newest.desc(), t.c.id.desc())
        .limit(query.page_size)
        .offset((query.page - 1) * query.page_size)
    )
    rows = (await ctx.conn.execute(page)).all()
    return ThreadPage(
        threads=[thread_item(r) for r in rows], total=total, page=query.page, page_size=query.page_size
    )


async def get_thread(ctx: WorkspaceContext, id: str) -> ThreadDetail:
    """Open a thread: the conversation with the lead in time order, the campaign's emails to the lead
    through this mailbox (`direction: out`, kind `campaign`, with `sendId`) and the messages received
    (`in`; bounces carry `bounce {status, hard, reason, recipient}`) and replies sent from the thread
    (`out`, kind `manual`). Opening does not mark the thread read: use `update_thread` with
    `unread: false`."""
    row = await thread_row(ctx, id)
    sent, received = await ledger_rows(ctx, row), await message_rows(ctx, id)
    sender = await _mailbox_email(ctx, row.mailbox_id) if sent else ""
    messages = [
        _ledger_item(item, sender) if is_sent else message_item(item)
        for is_sent, item in arrival_order(sent, received)
    ]
    return ThreadDetail(**thread_item(row).model_dump(), messages=messages)


async def update_thread(ctx: WorkspaceContext, id: str, body: UpdateThreadIn) -> Thread:
    """Change a thread's label or its unread flag. `labelId` (a label of the workspace) becomes the
    thread's label and does what the same label set by the classifier does: a positive label (e.g.
    Interested) makes the lead `interested`, a negative one takes that back; the label is put on the lead,
    running its triggers, with a `lead.labeled` event. `labelId: null` clears the thread's label. A label
    chosen here is manual: the thread says who chose it, and the automatic classifier never changes it
    afterwards. Labels already on the lead stay (remove them with `unlabel_leads`). `unread: false` marks
    the thread read."""
    row = await thread_row(ctx, id)
    values: dict[str, Any] = {}
    if "label_id" in body.model_fields_set:
        who = await who_acts(ctx)
        if body.label_id is not None:
            label = await label_row(ctx, body.label_id)
            values |= {"label_id": label.id, "label_source": "manual", "label_reason": f"set by {who}"}
            label_type = (
                await ctx.conn.execute(
                    scoped(ctx, labels).select(labels.c.type).where(labels.c.id == label.id)
                )
            ).scalar_one()
            # what the classifier's label does, by the same code: status, triggers, `lead.labeled`
            if await label_thread_leads(ctx, label, label_type, [row.lead_id], "manual"):
                data = await lead_event_data(
                    ctx,
                    row.lead_id,
                    campaign_id=row.campaign_id,
                    send_id=await _answered(ctx, id),
                    thread_id=id,
                )
                await record_event(ctx, "lead.labeled", labeled_data(data, label, "manual"))
        else:
            values |= {"label_id": None, "label_source": "manual", "label_reason": f"cleared by {who}"}
    if body.unread is not None:
        values["unread"] = body.unread
    if values:
        await ctx.conn.execute(scoped(ctx, threads).update().where(t.c.id == id).values(**values))
        if "label_id" in values:
            await sync_replies(ctx, [row.lead_id])  # the reply moves between sentiments
        row = await thread_row(ctx, id)
    return thread_item(row)


async def _answered(ctx: WorkspaceContext, thread_id: str) -> str | None:
    """The campaign email the thread's latest received message answered (for the event's step and variant)."""
    found = await ctx.conn.execute(
        scoped(ctx, inbox_messages)
        .select(inbox_messages.c.send_id)
        .where(
            inbox_messages.c.thread_id == thread_id,
            inbox_messages.c.direction == "in",
            inbox_messages.c.send_id.is_not(None),
        )
        .order_by(inbox_messages.c.arrived_at.desc(), inbox_messages.c.id.desc())
        .limit(1)
    )
    value = found.scalar_one_or_none()
    return None if value is None else str(value)


# --- helpers shared with the reply ---------------------------------------------------------------------


async def thread_row(ctx: WorkspaceContext, id: str) -> Any:
    """The thread with its lead and label; 404 when the workspace has no such thread."""
    row = (await ctx.conn.execute(_thread_select(ctx).where(t.c.id == id))).one_or_none()
    if row is None:
        raise NotFound("thread", id)
    return row


def thread_item(row: Any) -> Thread:
    name = " ".join(part for part in (row.first_name, row.last_name) if part) or None
    label = (
        ThreadLabel(id=row.label_id, name=row.label_name, type=row.label_type)
        if row.label_id is not None and row.label_name is not None
        else None
    )
    return Thread.from_row(row, lead=ThreadLead(email=row.lead_email, name=name), label=label)


async def campaign_lead_id(ctx: WorkspaceContext, row: Any) -> str | None:
    """The campaign lead of the thread's lead in its campaign (its sends hang off it), if any."""
    if row.campaign_id is None:
        return None
    found = await ctx.conn.execute(
        scoped(ctx, campaign_leads)
        .select(campaign_leads.c.id)
        .where(campaign_leads.c.campaign_id == row.campaign_id, campaign_leads.c.lead_id == row.lead_id)
    )
    value = found.scalar_one_or_none()
    return None if value is None else str(value)


async def ledger_rows(ctx: WorkspaceContext, row: Any) -> list[Any]:
    """The campaign's emails to the thread's lead through its mailbox (delivered ones), oldest first."""
    cl = await campaign_lead_id(ctx, row)
    if cl is None:
        return []
    return list(
        (
            await ctx.conn.execute(
                scoped(ctx, sends)
                .select(
                    sends.c.id,
                    sends.c.message_id,
                    sends.c.to_email,
                    sends.c.subject,
                    sends.c.body_text,
                    sends.c.body_html,
                    sends.c.sent_at,
                    sends.c.created_at,
                )
                .where(
                    sends.c.campaign_lead_id == cl,
                    sends.c.mailbox_id.is_not_distinct_from(row.mailbox_id),
                    sends.c.status.in_(LEDGER_SENT),
                )
                .order_by(sends.c.created_at, sends.c.id)
            )
        ).all()
    )


async def message_rows(ctx: WorkspaceContext, thread_id: str) -> list[Any]:
    """The thread's `inbox_messages`, oldest first."""
    return list(
        (
            await ctx.conn.execute(
                scoped(ctx, inbox_messages)
                .select()
                .where(inbox_messages.c.thread_id == thread_id)
                .order_by(inbox_messages.c.arrived_at, inbox_messages.c.id)
            )
        ).all()
    )


def arrival_order(sent: Sequence[Any], received: Sequence[Any]) -> list[tuple[bool, Any]]:
    """The conversation in the order its messages arrived, `(is a ledger row, row)`; an answer is never
    listed before what it answers (docs/inbox.md, "Opening a thread").

    Our emails (the ledger's, and replies sent from the thread) count at the instant the SMTP server took
    them. A received message's INTERNALDATE has whole seconds (the true arrival is up to a second later) and
    it arrived before the worker recorded it (`created_at`): it counts at the earlier of the two. It never
    counts before the campaign email it answers (`send_id`: also when the mail server's clock is behind
    ours), and at the same instant it comes after ours."""
    answered = {s.id: _utc(s.sent_at or s.created_at) for s in sent}
    keyed: list[tuple[tuple[dt.datetime, int, dt.datetime, str], bool, Any]] = []
    for s in sent:
        at = _utc(s.sent_at or s.created_at)
        keyed.append(((at, 0, at, s.id), True, s))
    for m in received:
        arrived = _utc(m.arrived_at)
        if m.direction == "in":
            at = min(arrived + WHOLE_SECOND, _utc(m.created_at))
            at = max(at, answered.get(m.send_id, at))
            keyed.append(((at, 1, arrived, m.id), False, m))
        else:
            keyed.append(((arrived, 0, arrived, m.id), False, m))
    keyed.sort(key=lambda k: k[0])
    return [(is_sent, item) for _, is_sent, item in keyed]


WHOLE_SECOND = dt.timedelta(seconds=1) - dt.timedelta(microseconds=1)
"""How much later than its INTERNALDATE (whole seconds) a received message may have arrived."""


def _utc(when: dt.datetime) -> dt.datetime:
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)


async def _mailbox_email(ctx: WorkspaceContext, mailbox_id: str | None) -> str:
    if mailbox_id is None:
        return ""
    found = await ctx.conn.execute(
        scoped(ctx, mailboxes).select(mailboxes.c.email).where(mailboxes.c.id == mailbox_id)
    )
    return str(found.scalar_one_or_none() or "")


def _ledger_item(s: Any, sender: str) -> ThreadMessage:
    return ThreadMessage(
        id=s.id,
        direction="out",
        kind="campaign",
        from_=sender,
        to=[s.to_email],
        subject=s.subject,
        text=s.body_text,
        html=s.body_html,
        at=s.sent_at or s.created_at,
        send_id=s.id,
    )


def message_item(m: Any) -> ThreadMessage:
    bounce = None
    if m.kind == "bounce" or m.bounce:
        data = m.bounce or {}
        bounce = Bounce(
            status=data.get("status"),
            hard=bool(data.get("hard", False)),
            reason=data.get("reason"),
            recipient=data.get("recipient"),
        )
    return ThreadMessage.from_row(
        m, from_=m.from_email, to=list(m.to_emails or []), at=m.arrived_at, bounce=bounce
    )


async def who_acts(ctx: WorkspaceContext) -> str:
    """Who acts, for a manual label's reason: the person's name and address."""
    if not ctx.user_id:
        return "the workspace"
    found = (
        await ctx.conn.execute(
            unscoped(users).select(users.c.name, users.c.email).where(users.c.id == ctx.user_id)
        )
    ).one_or_none()
    return f"{found.name} <{found.email}>" if found is not None else "a member"
