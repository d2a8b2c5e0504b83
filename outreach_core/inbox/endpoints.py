"""The reply threads' routes and tools (DESIGN section 9 "Inbox (threads)")."""

from __future__ import annotations

from outreach_core.inbox.schemas import (
    ListThreadsQuery,
    ReplyIn,
    ReplySent,
    Thread,
    ThreadDetail,
    ThreadPage,
    UpdateThreadIn,
)
from outreach_core.inbox.thread_reply import prepare_reply_to_thread, reply_to_thread
from outreach_core.inbox.threads import get_thread, list_threads, thread_row, update_thread
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.mail.message import reply_subject
from outreach_core.mail.sanitize import header_safe

QUOTE_CHARS = 300


async def _describe_reply(ctx: WorkspaceContext, id: str, body: ReplyIn) -> str:
    row = await thread_row(ctx, id)
    text = " ".join(body.body.split())
    quoted = text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"
    subject = header_safe(body.subject or "").strip() or reply_subject(row.subject)
    return f'Send this email to {row.lead_email} (subject "{subject}")? "{quoted}"'


ENDPOINTS = (
    Endpoint(
        "GET", "/threads", list_threads, ThreadPage, query=ListThreadsQuery, read_only=True, tag="inbox"
    ),
    Endpoint("GET", "/threads/{id}", get_thread, ThreadDetail, read_only=True, tag="inbox"),
    Endpoint(
        "PATCH",
        "/threads/{id}",
        update_thread,
        Thread,
        body=UpdateThreadIn,
        tag="inbox",
        destructive=True,
        idempotent=True,
    ),
    Endpoint(
        "POST",
        "/threads/{id}/reply",
        reply_to_thread,
        ReplySent,
        body=ReplyIn,
        confirm=_describe_reply,
        prepare=prepare_reply_to_thread,
        tag="inbox",
        open_world=True,
    ),
)
