"""the inbox (sync checkpoints, leases, threads, messages, built-in labels) and webhooks (endpoints,
deliveries, attempts)

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import JsonType, UtcDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

ID = sa.String(40)


def _ws() -> sa.Column[str]:
    return sa.Column(
        "workspace_id",
        ID,
        sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
        nullable=False,
    )


def upgrade() -> None:
    # Plain ADD COLUMN and CREATE INDEX (no batch mode): a SQLite table rebuild drops the table, and with
    # foreign keys on that would cascade into lead_labels and campaign_mailboxes.
    op.add_column("mailboxes", sa.Column("inbox_failures", sa.Integer(), server_default="0", nullable=False))
    op.add_column("mailboxes", sa.Column("inbox_error", sa.Boolean(), server_default="0", nullable=False))
    op.add_column("mailboxes", sa.Column("inbox_since", UtcDateTime(), nullable=True))
    op.add_column("labels", sa.Column("builtin", sa.String(24), nullable=True))
    op.create_index("ix_labels_ws_builtin", "labels", ["workspace_id", "builtin"], unique=True)

    op.create_table(
        "inbox_folders",
        sa.Column("mailbox_id", ID, sa.ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("folder", sa.String(500), nullable=False),
        _ws(),
        sa.Column("role", sa.String(8), nullable=False),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=False),
        sa.Column("last_uid", sa.BigInteger(), nullable=False),
        sa.Column("synced_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("mailbox_id", "folder", name="pk_inbox_folders"),
    )
    op.create_table(
        "inbox_leases",
        sa.Column("mailbox_id", ID, sa.ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("holder", sa.String(64), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("mailbox_id", name="pk_inbox_leases"),
    )
    op.create_index("ix_inbox_leases_expires", "inbox_leases", ["expires_at"])
    op.create_table(
        "threads",
        sa.Column("id", ID, nullable=False),
        _ws(),
        sa.Column("conversation", sa.String(130), nullable=False),
        sa.Column("lead_id", ID, sa.ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
        sa.Column("campaign_id", ID, sa.ForeignKey("campaigns.id", ondelete="SET NULL"), nullable=True),
        sa.Column("mailbox_id", ID, sa.ForeignKey("mailboxes.id", ondelete="SET NULL"), nullable=True),
        sa.Column("subject", sa.Text(), server_default="", nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("label_id", ID, sa.ForeignKey("labels.id", ondelete="SET NULL"), nullable=True),
        sa.Column("label_source", sa.String(8), nullable=True),
        sa.Column("label_reason", sa.String(500), nullable=True),
        sa.Column("last_message_at", UtcDateTime(), nullable=False),
        sa.Column("unread", sa.Boolean(), server_default="1", nullable=False),
        sa.Column("message_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("search_text", sa.Text(), server_default="", nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_threads"),
        sa.UniqueConstraint("workspace_id", "conversation", name="uq_threads_workspace_id_conversation"),
    )
    op.create_index("ix_threads_ws_last", "threads", ["workspace_id", "last_message_at", "id"])
    op.create_index("ix_threads_ws_label", "threads", ["workspace_id", "label_id", "last_message_at", "id"])
    op.create_index(
        "ix_threads_ws_campaign", "threads", ["workspace_id", "campaign_id", "last_message_at", "id"]
    )
    op.create_index(
        "ix_threads_ws_mailbox", "threads", ["workspace_id", "mailbox_id", "last_message_at", "id"]
    )
    op.create_index("ix_threads_lead", "threads", ["lead_id"])
    op.create_table(
        "inbox_messages",
        sa.Column("id", ID, nullable=False),
        _ws(),
        sa.Column("thread_id", ID, sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False),
        sa.Column("mailbox_id", ID, sa.ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("direction", sa.String(3), nullable=False),
        sa.Column("folder", sa.String(500), nullable=True),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=True),
        sa.Column("uid", sa.BigInteger(), nullable=True),
        sa.Column("message_id", sa.String(998), nullable=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("from_email", sa.String(320), server_default="", nullable=False),
        sa.Column("from_name", sa.String(200), nullable=True),
        sa.Column("to_emails", JsonType(), nullable=False),
        sa.Column("subject", sa.Text(), server_default="", nullable=False),
        sa.Column("text", sa.Text(), server_default="", nullable=False),
        sa.Column("html", sa.Text(), nullable=True),
        sa.Column("bounce", JsonType(), nullable=True),
        sa.Column("send_id", ID, sa.ForeignKey("sends.id", ondelete="SET NULL"), nullable=True),
        sa.Column("forwarded", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("source", sa.String(8), nullable=False),
        sa.Column("reason", sa.String(500), nullable=True),
        sa.Column("arrived_at", UtcDateTime(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_inbox_messages"),
        sa.UniqueConstraint(
            "mailbox_id",
            "folder",
            "uidvalidity",
            "uid",
            name="uq_inbox_messages_mailbox_id_folder_uidvalidity_uid",
        ),
    )
    op.create_index("ix_inbox_messages_thread", "inbox_messages", ["thread_id", "arrived_at"])
    op.create_index("ix_inbox_messages_mailbox_msgid", "inbox_messages", ["mailbox_id", "message_id"])
    op.create_index("ix_inbox_messages_send", "inbox_messages", ["send_id"])

    op.create_table(
        "webhooks",
        sa.Column("id", ID, nullable=False),
        _ws(),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("description", sa.String(500), nullable=True),
        sa.Column("events", JsonType(), nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default="1", nullable=False),
        sa.Column("disabled_reason", sa.String(500), nullable=True),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("previous_secret_encrypted", sa.Text(), nullable=True),
        sa.Column("previous_secret_until", UtcDateTime(), nullable=True),
        sa.Column("failing_since", UtcDateTime(), nullable=True),
        sa.Column("failed_attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_delivery_at", UtcDateTime(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_webhooks"),
    )
    op.create_index("ix_webhooks_ws_created", "webhooks", ["workspace_id", "created_at", "id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", ID, nullable=False),
        _ws(),
        sa.Column("webhook_id", ID, sa.ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False),
        sa.Column("event_id", ID, nullable=False),
        sa.Column("type", sa.String(40), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("round_attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_at", UtcDateTime(), nullable=True),
        sa.Column("claimed_until", UtcDateTime(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("delivered_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
        sa.UniqueConstraint("webhook_id", "event_id", name="uq_webhook_deliveries_webhook_id_event_id"),
    )
    pending = sa.text("next_attempt_at IS NOT NULL")
    op.create_index(
        "ix_webhook_deliveries_due",
        "webhook_deliveries",
        ["webhook_id", "next_attempt_at"],
        sqlite_where=pending,
        postgresql_where=pending,
    )
    op.create_index(
        "ix_webhook_deliveries_next",
        "webhook_deliveries",
        ["next_attempt_at"],
        sqlite_where=pending,
        postgresql_where=pending,
    )
    op.create_index(
        "ix_webhook_deliveries_hook_created",
        "webhook_deliveries",
        ["webhook_id", "created_at", "id", "status", "workspace_id"],
    )
    op.create_index("ix_webhook_deliveries_created", "webhook_deliveries", ["created_at"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", ID, nullable=False),
        _ws(),
        sa.Column(
            "delivery_id", ID, sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_attempts"),
    )
    op.create_index("ix_webhook_attempts_delivery", "webhook_attempts", ["delivery_id", "at"])


def downgrade() -> None:
    for table in ("webhook_attempts", "webhook_deliveries", "webhooks", "inbox_messages", "threads"):
        op.drop_table(table)
    op.drop_table("inbox_leases")
    op.drop_table("inbox_folders")
    op.drop_index("ix_labels_ws_builtin", table_name="labels")
    # DROP COLUMN without a table rebuild (SQLite >= 3.35 and PostgreSQL)
    op.drop_column("labels", "builtin")
    for column in ("inbox_since", "inbox_error", "inbox_failures"):
        op.drop_column("mailboxes", column)
