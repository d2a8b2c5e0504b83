"""the warmup pool (issue 32 item 1): `warmup_mailboxes` (settings and today's plan per mailbox) and
`warmup_messages` (the warmup emails exchanged across the server's pool)

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

ID = sa.String(40)


def upgrade() -> None:
    op.create_table(
        "warmup_mailboxes",
        sa.Column("mailbox_id", ID, sa.ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("workspace_id", ID, sa.ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("target", sa.Integer(), server_default="20", nullable=False),
        sa.Column("ramp_start", sa.Integer(), server_default="2", nullable=False),
        sa.Column("ramp_increment", sa.Integer(), server_default="2", nullable=False),
        sa.Column("reply_rate", sa.Integer(), server_default="30", nullable=False),
        sa.Column("started_on", sa.String(10), nullable=True),
        sa.Column("day", sa.String(10), nullable=True),
        sa.Column("target_today", sa.Integer(), server_default="0", nullable=False),
        sa.Column("sent_today", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_at", UtcDateTime(), nullable=True),
        sa.Column("tended_at", UtcDateTime(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("removed", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("reason", sa.String(300), nullable=True),
        sa.Column("updated_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("mailbox_id", name="pk_warmup_mailboxes"),
    )
    op.create_index("ix_warmup_mailboxes_due", "warmup_mailboxes", ["enabled", "next_at"])
    op.create_table(
        "warmup_messages",
        sa.Column("id", ID, nullable=False),
        sa.Column("token", sa.String(40), nullable=False),
        sa.Column("from_mailbox_id", ID, sa.ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("to_mailbox_id", ID, sa.ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("reply_to_id", ID, nullable=True),
        sa.Column("message_id", sa.String(255), nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("sent_at", UtcDateTime(), nullable=False),
        sa.Column("landed", sa.String(8), nullable=True),
        sa.Column("landed_at", UtcDateTime(), nullable=True),
        sa.Column("reply", sa.String(8), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_warmup_messages"),
        sa.UniqueConstraint("token", name="uq_warmup_messages_token"),
    )
    op.create_index("ix_warmup_messages_to", "warmup_messages", ["to_mailbox_id", "status", "landed"])
    op.create_index("ix_warmup_messages_from", "warmup_messages", ["from_mailbox_id", "sent_at"])
    op.create_index("ix_warmup_messages_reply", "warmup_messages", ["reply", "to_mailbox_id"])
    op.create_index("ix_warmup_messages_open", "warmup_messages", ["status", "landed", "sent_at"])
    op.create_index("ix_warmup_messages_sent_at", "warmup_messages", ["sent_at"])


def downgrade() -> None:
    op.drop_table("warmup_messages")
    op.drop_table("warmup_mailboxes")
