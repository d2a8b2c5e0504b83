"""domain_lookups: the domains of queued import rows, which the enrich worker looks up before the merge
reaches them, so that their leads are stored enriched (written once) instead of inserted and updated again

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.db.types import UtcDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "domain_lookups",
        sa.Column("domain", sa.String(253), nullable=False),
        sa.Column("queued_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("domain", name="pk_domain_lookups"),
    )


def downgrade() -> None:
    op.drop_table("domain_lookups")
