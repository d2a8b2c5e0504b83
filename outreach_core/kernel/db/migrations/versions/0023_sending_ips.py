"""sending_ips: the operator's outbound SOCKS5 proxies; mailboxes.sending_route and sending_ip_id (issue 32)

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sending_ips",
        sa.Column("id", sa.String(length=40), primary_key=True),
        sa.Column("proxy_encrypted", sa.Text(), nullable=False),
        sa.Column("proxy_host", sa.String(length=300), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("country", sa.String(length=2), nullable=True),
        sa.Column("ip", sa.String(length=45), nullable=True),
        sa.Column("capacity", sa.Integer(), nullable=False),
        sa.Column("dedicated_to", sa.String(length=40), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )
    with op.batch_alter_table("mailboxes") as batch_op:
        batch_op.add_column(
            sa.Column("sending_route", sa.String(length=10), nullable=False, server_default="own")
        )
        batch_op.add_column(sa.Column("sending_ip_id", sa.String(length=40), nullable=True))
    op.create_index("ix_mailboxes_sending_ip", "mailboxes", ["sending_ip_id"])


def downgrade() -> None:
    op.drop_index("ix_mailboxes_sending_ip", table_name="mailboxes")
    with op.batch_alter_table("mailboxes") as batch_op:
        batch_op.drop_column("sending_ip_id")
        batch_op.drop_column("sending_route")
    op.drop_table("sending_ips")
