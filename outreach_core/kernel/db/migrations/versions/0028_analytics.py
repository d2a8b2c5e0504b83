"""Analytics rollups (issue 28): `analytics_counters` (hourly, daily and all-time UTC buckets per dimension)
and `analytics_replies` (the reply counted per lead and campaign). Filled by `outreach analytics rebuild`.

Revision ID: 0028
Revises: 0027
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

COUNTERS = ("sent", "replied", "positive", "negative", "neutral", "warning", "bounced", "opened", "won")


def upgrade() -> None:
    op.create_table(
        "analytics_counters",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("dim", sa.String(length=2), nullable=False),
        sa.Column("k1", sa.String(length=64), nullable=False),
        sa.Column("k2", sa.String(length=64), nullable=False),
        sa.Column("grain", sa.String(length=1), nullable=False),
        sa.Column("bucket", UtcDateTime(), nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False, server_default="0") for name in COUNTERS),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_analytics_counters_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ux_analytics_counters_key",
        "analytics_counters",
        ["workspace_id", "dim", "k1", "k2", "grain", "bucket"],
        unique=True,
    )
    op.create_index(
        "ix_analytics_counters_period",
        "analytics_counters",
        ["workspace_id", "dim", "grain", "bucket", "k1", "k2"],
        postgresql_include=list(COUNTERS),
    )
    op.create_table(
        "analytics_replies",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("campaign_id", sa.String(length=40), nullable=False),
        sa.Column("lead_id", sa.String(length=40), nullable=False),
        sa.Column("message_id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.String(length=40), nullable=False),
        sa.Column("signature", sa.String(length=400), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_analytics_replies_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ux_analytics_replies_key",
        "analytics_replies",
        ["workspace_id", "lead_id", "campaign_id"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_table("analytics_replies")
    op.drop_table("analytics_counters")
