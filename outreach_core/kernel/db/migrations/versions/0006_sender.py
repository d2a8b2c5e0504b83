"""the sender: indexes for due campaign leads, a mailbox's follow-ups, daily caps and bounce rates

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 10:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain index operations (no batch mode): a SQLite table rebuild would drop the counter triggers.
    op.drop_index("ix_campaign_leads_due", table_name="campaign_leads")
    op.drop_index("ix_campaign_leads_mailbox", table_name="campaign_leads")
    op.create_index("ix_campaign_leads_due", "campaign_leads", ["campaign_id", "status", "next_at", "id"])
    op.create_index("ix_campaign_leads_mailbox", "campaign_leads", ["mailbox_id", "status", "next_at"])
    op.create_index("ix_sends_campaign_step", "sends", ["campaign_id", "step", "created_at"])
    op.create_index("ix_sends_campaign_status", "sends", ["campaign_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_sends_campaign_status", table_name="sends")
    op.drop_index("ix_sends_campaign_step", table_name="sends")
    op.drop_index("ix_campaign_leads_mailbox", table_name="campaign_leads")
    op.drop_index("ix_campaign_leads_due", table_name="campaign_leads")
    op.create_index("ix_campaign_leads_mailbox", "campaign_leads", ["mailbox_id"])
    op.create_index("ix_campaign_leads_due", "campaign_leads", ["campaign_id", "status", "next_at"])
