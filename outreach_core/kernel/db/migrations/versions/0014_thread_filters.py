"""threads: indexes for the `kind` and `unread` filters of list_threads (their `total` read every thread of
the workspace without them)

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_threads_ws_kind", "threads", ["workspace_id", "kind", "last_message_at", "id"])
    op.create_index("ix_threads_ws_unread", "threads", ["workspace_id", "unread", "last_message_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_threads_ws_unread", table_name="threads")
    op.drop_index("ix_threads_ws_kind", table_name="threads")
