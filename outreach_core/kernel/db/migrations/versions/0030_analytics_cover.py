"""SQLite: an index of `analytics_counters` that carries the counters (issue 28): a period's rows of one
dimension read from the index alone, without a table lookup per row (campaign analytics reads 200
campaigns x 90 daily rows). PostgreSQL already has it: `ix_analytics_counters_period` INCLUDEs the
counters. Raw DDL on SQLite only (tests/test_migrations.py knows the name).

Revision ID: 0030
Revises: 0029
"""

from __future__ import annotations

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

COUNTERS = ("sent", "replied", "positive", "negative", "neutral", "warning", "bounced", "opened", "won")
NAME = "ix_analytics_counters_cover"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    columns = ", ".join(("workspace_id", "dim", "grain", "bucket", "k1", "k2", *COUNTERS))
    op.execute(f"CREATE INDEX {NAME} ON analytics_counters ({columns})")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(f"DROP INDEX {NAME}")
