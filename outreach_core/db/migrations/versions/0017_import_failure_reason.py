"""lead_imports.failure_reason: why an import ended `failed` (its final chunk never came)

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lead_imports") as batch_op:
        batch_op.add_column(sa.Column("failure_reason", sa.String(length=300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lead_imports") as batch_op:
        batch_op.drop_column("failure_reason")
