"""sends: an index on (workspace_id, lead_id, mailbox_id, sent_at), for the inbox's match by address (the
latest email a mailbox sent a lead read the mailbox's whole send history without it)

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_sends_lead_mailbox", "sends", ["workspace_id", "lead_id", "mailbox_id", "sent_at"])


def downgrade() -> None:
    op.drop_index("ix_sends_lead_mailbox", table_name="sends")
