"""Wire models of reply threads (DESIGN section 9 "Inbox (threads)"; docs/inbox.md#threads)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import Omittable, Timestamp, WireModel
from outreach_core.targets.schemas import Id

ThreadKind = Literal["reply", "auto_reply", "out_of_office", "bounce", "unsubscribe_request"]
LabelSource = Literal["ai", "rules", "manual"]
Direction = Literal["in", "out"]
MAX_REPLY_BODY = 100_000
MAX_SUBJECT = 500


class ThreadLead(WireModel):
    email: str
    name: str | None = Field(description="First and last name, or null when the lead has neither.")


class ThreadLabel(WireModel):
    id: str
    name: str
    type: Literal["positive", "negative", "neutral", "warning"]


class Thread(WireModel):
    id: str
    lead_id: str
    lead: ThreadLead
    campaign_id: str | None = Field(description="The campaign whose email the lead answered, if any.")
    mailbox_id: str | None = Field(
        description="The mailbox the conversation runs through (null once deleted)."
    )
    subject: str
    kind: ThreadKind = Field(
        description="What the conversation is: unsubscribe_request (and a hard bounce as it arrives) "
        "outranks reply, which outranks the automatic answers (bounce, out_of_office, auto_reply); among "
        "kinds of one rank the latest counts."
    )
    label: ThreadLabel | None
    label_source: LabelSource | None = Field(
        description="Who chose the label: `ai`, `rules`, or `manual` (a person; the classifier then never "
        "changes it)."
    )
    label_reason: str | None = Field(description="Why: the rule, the AI's reason, or who set it.")
    last_message_at: Timestamp
    unread: bool
    message_count: int = Field(description="Messages received and replies sent from the thread.")


class ThreadPage(WireModel):
    threads: list[Thread] = Field(description="Newest `lastMessageAt` first.")
    total: int
    page: int
    page_size: int


class ListThreadsQuery(WireModel):
    label_id: Id | None = Field(default=None, description="A label id, or `none` for threads without one.")
    campaign_id: Id | None = Field(default=None, description="Only threads of this campaign.")
    mailbox_id: Id | None = Field(default=None, description="Only threads of this mailbox.")
    lead_id: Id | None = Field(default=None, description="Only threads with this lead.")
    kind: list[ThreadKind] | None = Field(default=None, description="Any of these kinds.")
    unread: bool | None = Field(default=None, description="true: only unread threads; false: only read ones.")
    search: str | None = Field(
        default=None, max_length=200, description="Part of the lead's email or name, or of the subject."
    )
    page: int = Field(default=1, ge=1, le=100_000, description="Page number, from 1.")
    page_size: int = Field(default=50, ge=10, le=200, description="Items per page, 10 to 200.")


class Bounce(WireModel):
    status: str | None = Field(description="The DSN status code, e.g. `5.1.1`.")
    hard: bool = Field(description="The address cannot receive mail (it is suppressed).")
    reason: str | None
    recipient: str | None = Field(description="The address that failed.")


class ThreadMessage(WireModel):
    id: str = Field(description="The message's id; for an email of the campaign, its send id.")
    direction: Direction
    kind: str = Field(
        description="Received: reply, auto_reply, out_of_office, bounce, unsubscribe_request, or complaint "
        "(a spam complaint report; its thread's kind is unsubscribe_request). Sent: `campaign` (an email "
        "of the sequence) or `manual` (a reply sent from the thread)."
    )
    from_: str = Field(alias="from", description="The sender's address.")
    to: list[str]
    subject: str
    text: str
    html: str | None = None
    at: Timestamp = Field(description="When it arrived in the mailbox (received) or was sent.")
    send_id: str | None = Field(
        default=None, description="The campaign email: the one sent (out) or the one answered (in)."
    )
    bounce: Bounce | None = Field(default=None, description="Bounces only.")


class ThreadDetail(Thread):
    messages: list[ThreadMessage] = Field(description="Oldest first.")


class UpdateThreadIn(WireModel):
    label_id: Id | None = Field(
        default=None,
        description="A label of the workspace: the thread's label, also put on the lead (its triggers run). "
        "null clears the thread's label. Either way the choice is manual and the classifier keeps it.",
    )
    unread: Omittable[bool] = Field(
        default=None, description=("true marks the thread unread, false marks it read.")
    )


ReplyBody = Annotated[str, StringConstraints(min_length=1, max_length=MAX_REPLY_BODY)]
Subject = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SUBJECT)]


class ReplyIn(WireModel):
    body: ReplyBody = Field(
        description="Plain text (blank lines split paragraphs) or simple HTML; sanitized. The mailbox's "
        "signature is added below it."
    )
    subject: Subject | None = Field(default=None, description="Default: `Re: <thread subject>`.")


class ReplySent(WireModel):
    message: ThreadMessage = Field(description="The reply as recorded in the thread.")
    message_id: str = Field(description="Its Message-ID header.")
    sent_folder: str = Field(
        description="`appended` when a copy was stored in the mailbox's Sent folder over IMAP; otherwise "
        "why not (the reply was sent all the same)."
    )
