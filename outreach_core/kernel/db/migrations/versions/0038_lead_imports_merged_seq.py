"""lead_imports: merged_seq, the last part of SQLite's side queue file merged into the database

Revision ID: 0038
Revises: 0037
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

# SQLite queues import chunks in a file of its own (`<database>-imports`, kernel/db/side_queue.py) so that a
# chunk request never waits for the merge's write lock. The merge records the part it merged here, in the
# same transaction as the merge: a part of the side file at or below it is merged (the marker decides after a
# kill between the merge's commit and the part's deletion). PostgreSQL leaves it empty.


def upgrade() -> None:
    with op.batch_alter_table("lead_imports") as batch:
        batch.add_column(sa.Column("merged_seq", sa.Integer(), nullable=True))


def downgrade() -> None:
    # not `batch_alter_table`: on SQLite it rebuilds `lead_imports`, and dropping the old table cascades to
    # `import_chunks`, `import_queue` and `import_seen` (foreign keys on); DROP COLUMN rebuilds nothing
    op.execute("ALTER TABLE lead_imports DROP COLUMN merged_seq")
