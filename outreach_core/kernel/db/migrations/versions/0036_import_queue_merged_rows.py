"""import_queue: merged_rows, how many of a part's rows are merged (SQLite merges a part in slices)

Revision ID: 0036
Revises: 0035
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

# On SQLite a chunk request waits for the merge transaction in progress (one writer at a time): a whole
# 5,000-row part per transaction made chunks arrive at the merge's pace. The merge now commits a slice of a
# part at a time and records here how far it got, in the same transaction (docs/leads.md).


def upgrade() -> None:
    with op.batch_alter_table("import_queue") as batch:
        batch.add_column(sa.Column("merged_rows", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("import_queue") as batch:
        batch.drop_column("merged_rows")
