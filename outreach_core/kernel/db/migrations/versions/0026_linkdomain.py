"""the link domain (issue 27, scope item 3; docs/link-domain.md): `link_domains`, one a workspace

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "link_domains",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("hostname", sa.String(length=253), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("dns", sa.String(length=8), nullable=False),
        sa.Column("tls", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=True),
        sa.Column("since", UtcDateTime(), nullable=False),
        sa.Column("next_check_at", UtcDateTime(), nullable=True),
        sa.Column("checked_at", UtcDateTime(), nullable=True),
        sa.Column("verified_at", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_by", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_link_domains_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", name="pk_link_domains"),
        sa.UniqueConstraint("hostname", name="uq_link_domains_hostname"),
    )
    op.create_index("ix_link_domains_next_check_at", "link_domains", ["next_check_at"])


def downgrade() -> None:
    op.drop_index("ix_link_domains_next_check_at", table_name="link_domains")
    op.drop_table("link_domains")
