"""Google and Microsoft mailboxes over OAuth (issue 32 item 3): `mailboxes.oauth_encrypted` (the grant's
tokens, encrypted) and `mailbox_oauth_states` (the single-use `state` of a connection started with
POST /mailboxes/oauth/start, with its PKCE verifier)

Revision ID: 0029
Revises: 0028
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

ID = sa.String(40)


def upgrade() -> None:
    with op.batch_alter_table("mailboxes") as batch_op:
        batch_op.add_column(sa.Column("oauth_encrypted", sa.Text(), nullable=True))
    op.create_table(
        "mailbox_oauth_states",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("workspace_id", ID, sa.ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("role", sa.String(8), nullable=False),
        sa.Column("provider", sa.String(16), nullable=False),
        sa.Column("verifier_encrypted", sa.Text(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mailbox_oauth_states"),
    )
    op.create_index("ix_mailbox_oauth_states_ws", "mailbox_oauth_states", ["workspace_id"])


def downgrade() -> None:
    op.drop_index("ix_mailbox_oauth_states_ws", table_name="mailbox_oauth_states")
    op.drop_table("mailbox_oauth_states")
    with op.batch_alter_table("mailboxes") as batch_op:
        batch_op.drop_column("oauth_encrypted")
