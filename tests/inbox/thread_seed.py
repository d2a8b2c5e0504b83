"""Threads for the thread tests: rows of `threads` and `inbox_messages` written as the inbox pipeline writes
them (until the ingestion lands, tests seed them directly), next to real sends made by the real sender."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import inbox_messages, leads, threads
from outreach_core.kernel.ids import new_id
from tests.conftest import WorkspaceHandle

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


async def seed_thread(
    ws: WorkspaceHandle,
    lead_id: str,
    mailbox_id: str | None,
    *,
    campaign_id: str | None = None,
    subject: str = "Hello",
    kind: str = "reply",
    at: datetime = T0,
    unread: bool = True,
    label_id: str | None = None,
    label_source: str | None = None,
    label_reason: str | None = None,
    messages: int = 0,
) -> str:
    """A thread of `lead_id` (its search text from the lead's email and name and the subject)."""

    async def insert(ctx: WorkspaceContext) -> str:
        lead = (
            await ctx.conn.execute(
                scoped(ctx, leads)
                .select(leads.c.email, leads.c.first_name, leads.c.last_name)
                .where(leads.c.id == lead_id)
            )
        ).one()
        name = " ".join(p for p in (lead.first_name, lead.last_name) if p)
        thread_id = new_id("thr")
        await ctx.conn.execute(
            scoped(ctx, threads).insert(
                {
                    "id": thread_id,
                    "conversation": f"{lead_id}:{campaign_id or '-'}:{mailbox_id}:{thread_id}",
                    "lead_id": lead_id,
                    "campaign_id": campaign_id,
                    "mailbox_id": mailbox_id,
                    "subject": subject,
                    "kind": kind,
                    "label_id": label_id,
                    "label_source": label_source,
                    "label_reason": label_reason,
                    "last_message_at": at,
                    "unread": unread,
                    "message_count": messages,
                    "search_text": f"{lead.email} {name} {subject}".lower(),
                    "created_at": at,
                }
            )
        )
        return thread_id

    return await ws.runtime.execute(await ws.principal(), insert)


async def seed_message(
    ws: WorkspaceHandle,
    thread_id: str,
    mailbox_id: str,
    *,
    at: datetime,
    from_email: str,
    message_id: str | None = None,
    text: str = "Sounds good, tell me more.",
    subject: str = "Re: Hello",
    kind: str = "reply",
    direction: str = "in",
    send_id: str | None = None,
    bounce: dict[str, Any] | None = None,
    uid: int | None = None,
    html: str | None = None,
) -> str:
    """A received message (`in`) in the thread, as the pipeline records it; the thread's count and last
    message time follow."""

    async def insert(ctx: WorkspaceContext) -> str:
        row_id = new_id("msg")
        await ctx.conn.execute(
            scoped(ctx, inbox_messages).insert(
                {
                    "id": row_id,
                    "thread_id": thread_id,
                    "mailbox_id": mailbox_id,
                    "direction": direction,
                    "folder": "INBOX" if direction == "in" else None,
                    "uidvalidity": 1 if direction == "in" else None,
                    "uid": uid if uid is not None else (int(at.timestamp() * 1000) % 10**9),
                    "message_id": message_id or f"<{row_id}@lead.example>",
                    "kind": kind,
                    "from_email": from_email,
                    "to_emails": ["box@mail.test"],
                    "subject": subject,
                    "text": text,
                    "html": html,
                    "bounce": bounce,
                    "send_id": send_id,
                    "source": "rules",
                    "reason": "seeded",
                    "arrived_at": at,
                    "created_at": at,
                }
            )
        )
        await ctx.conn.execute(
            scoped(ctx, threads)
            .update()
            .where(threads.c.id == thread_id)
            .values(message_count=threads.c.message_count + 1, last_message_at=at)
        )
        return row_id

    return await ws.runtime.execute(await ws.principal(), insert)


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)
