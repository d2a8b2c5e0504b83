"""list_leads: `ix_list_leads_members` (list_id, lead_id, workspace_id) in place of
`ix_list_leads_list_added` (list_id, added_at, lead_id), which no query read: a list's workspace-scoped member
count and the membership probe of a list's page are answered from the index alone

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_list_leads_members", "list_leads", ["list_id", "lead_id", "workspace_id"])
    op.drop_index("ix_list_leads_list_added", table_name="list_leads")


def downgrade() -> None:
    op.create_index("ix_list_leads_list_added", "list_leads", ["list_id", "added_at", "lead_id"])
    op.drop_index("ix_list_leads_members", table_name="list_leads")
