"""Deliverability (issue 27): `sending_domains`, a workspace's sending domains with their latest check
report and history; the domains of connected mailboxes become sending domains, due for a first check

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import outreach_core.kernel.db.types
from outreach_core.kernel.db.types import UtcDateTime

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sending_domains",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("report", outreach_core.kernel.db.types.JsonType(), nullable=True),
        sa.Column("score", sa.Integer(), nullable=True),
        sa.Column("grade", sa.String(length=1), nullable=True),
        sa.Column("checked_at", UtcDateTime(), nullable=True),
        sa.Column("history", outreach_core.kernel.db.types.JsonType(), nullable=False),
        sa.Column("next_check_at", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_sending_domains_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", "domain", name="pk_sending_domains"),
    )
    op.create_index("ix_sending_domains_next_check_at", "sending_domains", ["next_check_at"])
    # Mailboxes connected before this revision: their domains are sending domains, due for a check now.
    op.execute(
        "INSERT INTO sending_domains (workspace_id, domain, history, next_check_at, created_at) "
        "SELECT workspace_id, domain, '[]', MIN(created_at), MIN(created_at) FROM mailboxes "
        "GROUP BY workspace_id, domain"
    )


def downgrade() -> None:
    op.drop_index("ix_sending_domains_next_check_at", table_name="sending_domains")
    op.drop_table("sending_domains")
