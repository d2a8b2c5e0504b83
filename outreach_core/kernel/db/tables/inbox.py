"""The inbox: folders synced per mailbox, sync leases, threads and the messages read back."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import JsonType, UtcDateTime

inbox_folders = Table(
    "inbox_folders",
    metadata,
    # The sync checkpoint of one folder of one mailbox: every UID up to `last_uid` under `uidvalidity` is
    # handled. Advanced in the transaction that records the messages.
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), primary_key=True),
    Column("folder", String(500), primary_key=True),  # the IMAP name as the server spells it
    ws_fk(),
    Column("role", String(8), nullable=False),  # inbox | junk
    Column("uidvalidity", BigInteger, nullable=False),
    Column("last_uid", BigInteger, nullable=False),
    Column("synced_at", UtcDateTime, nullable=False),
)

inbox_leases = Table(
    "inbox_leases",
    metadata,
    # Which worker process reads which mailbox (several `outreach worker` processes on PostgreSQL).
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), primary_key=True),
    Column("holder", String(64), nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Index("ix_inbox_leases_expires", "expires_at"),
)

threads = Table(
    "threads",
    metadata,
    # One conversation with a lead: the campaign's emails to the lead (from `sends`) and the messages of
    # `inbox_messages`. `conversation` is its identity in the workspace (lead, campaign or -, mailbox).
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("conversation", String(130), nullable=False),
    Column("lead_id", ID, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("campaign_id", ID, ForeignKey("campaigns.id", ondelete="SET NULL"), nullable=True),
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="SET NULL"), nullable=True),
    Column("subject", Text, nullable=False, server_default=""),
    Column("kind", String(20), nullable=False),  # reply|auto_reply|out_of_office|bounce|unsubscribe_request
    Column("label_id", ID, ForeignKey("labels.id", ondelete="SET NULL"), nullable=True),
    Column("label_source", String(8), nullable=True),  # ai | rules | manual
    Column("label_reason", String(500), nullable=True),
    Column("last_message_at", UtcDateTime, nullable=False),
    Column("unread", Boolean, nullable=False, server_default="1"),
    Column("message_count", Integer, nullable=False, server_default="0"),
    Column("search_text", Text, nullable=False, server_default=""),  # lower(lead email, name, subject)
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "conversation"),
    Index("ix_threads_ws_last", "workspace_id", "last_message_at", "id"),
    Index("ix_threads_ws_label", "workspace_id", "label_id", "last_message_at", "id"),
    Index("ix_threads_ws_campaign", "workspace_id", "campaign_id", "last_message_at", "id"),
    Index("ix_threads_ws_mailbox", "workspace_id", "mailbox_id", "last_message_at", "id"),
    Index("ix_threads_ws_kind", "workspace_id", "kind", "last_message_at", "id"),
    Index("ix_threads_ws_unread", "workspace_id", "unread", "last_message_at", "id"),
    Index("ix_threads_lead", "lead_id"),
)

inbox_messages = Table(
    "inbox_messages",
    metadata,
    # Messages read from a mailbox (direction `in`) and replies a person sent from a thread (`out`).
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("thread_id", ID, ForeignKey("threads.id", ondelete="CASCADE"), nullable=False),
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
    Column("direction", String(3), nullable=False),  # in | out
    Column("folder", String(500), nullable=True),
    Column("uidvalidity", BigInteger, nullable=True),
    Column("uid", BigInteger, nullable=True),
    Column("message_id", String(998), nullable=True),  # the Message-ID header as given
    # sha256 of the body (below the top-level headers): with the Message-ID, what makes a copy a copy
    Column("body_digest", String(64), nullable=True),
    Column("kind", String(20), nullable=False),  # the thread kinds, complaint (in); campaign, manual (out)
    Column("from_email", String(320), nullable=False, server_default=""),
    Column("from_name", String(200), nullable=True),
    Column("to_emails", JsonType, nullable=False),
    Column("subject", Text, nullable=False, server_default=""),
    Column("text", Text, nullable=False, server_default=""),
    Column("html", Text, nullable=True),
    Column("bounce", JsonType, nullable=True),  # {status, hard, reason, recipient}
    Column("send_id", ID, ForeignKey("sends.id", ondelete="SET NULL"), nullable=True),  # the email answered
    Column("forwarded", Boolean, nullable=False, server_default="0"),  # matched by thread, not the lead's
    Column("source", String(8), nullable=False),  # rules | ai | manual: who classified it
    Column("reason", String(500), nullable=True),
    Column("arrived_at", UtcDateTime, nullable=False),  # INTERNALDATE (in) or when sent (out)
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("mailbox_id", "folder", "uidvalidity", "uid"),
    Index("ix_inbox_messages_thread", "thread_id", "arrived_at"),
    Index("ix_inbox_messages_mailbox_msgid", "mailbox_id", "message_id"),
    Index("ix_inbox_messages_send", "send_id"),
)
