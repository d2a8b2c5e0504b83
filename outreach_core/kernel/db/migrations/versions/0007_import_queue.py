"""import chunks are queued by the request and merged into leads by the import worker

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import outreach_core.kernel.db.types

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "import_queue",
        sa.Column("import_id", sa.String(length=40), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("rows", outreach_core.kernel.db.types.JsonType(), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["import_id"], ["lead_imports.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("import_id", "seq"),
    )
    op.create_index("ix_import_queue_created", "import_queue", ["created_at"])
    # Plain ADD COLUMN (no batch mode): a SQLite table rebuild of lead_imports is not needed.
    op.add_column("lead_imports", sa.Column("queued", sa.Integer(), server_default="0", nullable=False))
    op.add_column("lead_imports", sa.Column("over_limit", sa.Integer(), server_default="0", nullable=False))
    op.add_column(
        "lead_imports", sa.Column("final_at", outreach_core.kernel.db.types.UtcDateTime(), nullable=True)
    )
    # Imports that already left `importing` had their final chunk; open ones keep accepting chunks.
    op.execute("UPDATE lead_imports SET final_at = created_at WHERE status <> 'importing'")


def downgrade() -> None:
    with op.batch_alter_table("lead_imports") as batch:
        batch.drop_column("final_at")
        batch.drop_column("over_limit")
        batch.drop_column("queued")
    op.drop_index("ix_import_queue_created", table_name="import_queue")
    op.drop_table("import_queue")
