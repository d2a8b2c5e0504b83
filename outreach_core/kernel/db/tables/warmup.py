"""The warmup pool (issue 32 item 1, docs/warmup.md): each mailbox's warmup settings and today's plan, and
the warmup emails exchanged between the mailboxes of the pool (every workspace of the server)."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, ForeignKey, Index, Integer, String, Table

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import UtcDateTime

warmup_mailboxes = Table(
    "warmup_mailboxes",
    metadata,
    # one row per mailbox whose warmup was ever set (PATCH /mailboxes/{id} warmup); none = warmup off
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), primary_key=True),
    ws_fk(),
    Column("enabled", Boolean, nullable=False, server_default="0"),
    Column("target", Integer, nullable=False, server_default="20"),
    Column("ramp_start", Integer, nullable=False, server_default="2"),
    Column("ramp_increment", Integer, nullable=False, server_default="2"),
    Column("reply_rate", Integer, nullable=False, server_default="30"),  # percent
    Column("started_on", String(10), nullable=True),  # warmup day 1 (YYYY-MM-DD, mailbox time zone)
    Column("day", String(10), nullable=True),  # the day `target_today` and `sent_today` are for
    Column("target_today", Integer, nullable=False, server_default="0"),
    Column("sent_today", Integer, nullable=False, server_default="0"),
    Column("next_at", UtcDateTime, nullable=True),  # earliest time of the next warmup email
    Column("tended_at", UtcDateTime, nullable=True),  # when its folders were last looked at over IMAP
    Column("score", Float, nullable=True),  # share in INBOX over 7 days (0-100); null = not enough data
    Column("removed", Boolean, nullable=False, server_default="0"),  # taken out of the pool (bounces)
    Column("reason", String(300), nullable=True),  # why it waits or was removed
    Column("updated_at", UtcDateTime, nullable=True),
    Index("ix_warmup_mailboxes_due", "enabled", "next_at"),
)

warmup_messages = Table(
    "warmup_messages",
    metadata,
    # Global on purpose: a warmup email goes from a mailbox of one workspace to one of another. Only the
    # warmup worker's modules read it (system scope); no route shows it.
    Column("id", ID, primary_key=True),
    Column("token", String(40), nullable=False, unique=True),  # the X-Outreach-Warmup header's value
    Column("from_mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
    Column("to_mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
    Column("reply_to_id", ID, nullable=True),  # the warmup email this one answers
    Column("message_id", String(255), nullable=False),
    Column("subject", String(200), nullable=False),
    Column("status", String(8), nullable=False),  # sending | sent | failed | bounced
    Column("sent_at", UtcDateTime, nullable=False),
    Column("landed", String(8), nullable=True),  # inbox | spam | missing (never found)
    Column("landed_at", UtcDateTime, nullable=True),
    Column("reply", String(8), nullable=True),  # wanted | sent: the recipient answers it
    Index("ix_warmup_messages_to", "to_mailbox_id", "status", "landed"),
    # the emails not found yet, oldest first (to look for, to mark missing); and the purge by age
    Index("ix_warmup_messages_open", "status", "landed", "sent_at"),
    Index("ix_warmup_messages_sent_at", "sent_at"),
    Index("ix_warmup_messages_from", "from_mailbox_id", "sent_at"),
    Index("ix_warmup_messages_reply", "reply", "to_mailbox_id"),
)
