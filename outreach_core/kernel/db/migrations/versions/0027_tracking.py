"""click and open tracking: opens and clicks counted on `sends`, one `tracking_events` row per request

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_COUNTS = ("open_count", "click_count", "flagged_opens", "flagged_clicks")


def upgrade() -> None:
    with op.batch_alter_table("sends") as batch_op:
        batch_op.add_column(sa.Column("opened_at", UtcDateTime(), nullable=True))
        batch_op.add_column(sa.Column("clicked_at", UtcDateTime(), nullable=True))
        for name in _COUNTS:
            batch_op.add_column(sa.Column(name, sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "tracking_events",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("send_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=5), nullable=False),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("flag", sa.String(length=16), nullable=True),
        sa.Column("user_agent", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_tracking_events_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["send_id"], ["sends.id"], name="fk_tracking_events_send_id_sends", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tracking_events"),
    )
    op.create_index("ix_tracking_events_send", "tracking_events", ["send_id", "at"])


def downgrade() -> None:
    op.drop_index("ix_tracking_events_send", table_name="tracking_events")
    op.drop_table("tracking_events")
    with op.batch_alter_table("sends") as batch_op:
        for name in reversed(_COUNTS):
            batch_op.drop_column(name)
        batch_op.drop_column("clicked_at")
        batch_op.drop_column("opened_at")
