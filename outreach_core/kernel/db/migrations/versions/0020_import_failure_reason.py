"""lead_imports.failure_reason: why an import ended `failed` (its final chunk never came); merged_at: when
a part of it was last merged (storing comes first while an import is being stored)

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lead_imports") as batch_op:
        batch_op.add_column(sa.Column("failure_reason", sa.String(length=300), nullable=True))
        batch_op.add_column(sa.Column("merged_at", UtcDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lead_imports") as batch_op:
        batch_op.drop_column("merged_at")
        batch_op.drop_column("failure_reason")
