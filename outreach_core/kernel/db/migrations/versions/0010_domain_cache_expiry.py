"""domain cache answers expire when DNS says (negative answers: the SOA's negative TTL, at most an hour)

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import outreach_core.kernel.db.types

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The cache only holds answers DNS can give again: emptied rather than given made-up expiry times (a
    # negative answer cached for a day under the old rule must not outlive its real TTL).
    op.execute("DELETE FROM domain_cache")
    with op.batch_alter_table("domain_cache") as batch:
        batch.add_column(sa.Column("expires_at", outreach_core.kernel.db.types.UtcDateTime(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("domain_cache") as batch:
        batch.drop_column("expires_at")
