"""inbox_messages.body_digest: a received message is a copy of one already recorded only when its Message-ID
and its body are the same (distinct bounces that share a Message-ID were dropped as copies)

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Rows recorded before keep NULL: they are recognised by their Message-ID alone, as they were.
    with op.batch_alter_table("inbox_messages") as batch:
        batch.add_column(sa.Column("body_digest", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("inbox_messages") as batch:
        batch.drop_column("body_digest")
