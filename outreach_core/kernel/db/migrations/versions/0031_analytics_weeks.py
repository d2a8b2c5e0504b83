"""Analytics rollups: a weekly grain (`k`, 7-day UTC blocks counted from the epoch) beside the hourly and
daily ones, so that a 90-day period reads about 12 weekly rows a key instead of 90 daily ones (campaign
analytics: 200 campaigns; docs/analytics.md, docs/PERFORMANCE.md "Analytics, 2026-11-26 evening"). The
weeks of existing counters are summed from their daily rows (a UTC day lies in exactly one week). The SQL
of a week is the same as `outreach_core.kernel.rollups.WEEK_BUCKET` (copied: a migration does not follow
later changes of the code).

Revision ID: 0031
Revises: 0030
"""

from __future__ import annotations

from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

COUNTERS = ("sent", "replied", "positive", "negative", "neutral", "warning", "bounced", "opened", "won")
WEEK = {
    "postgresql": "to_timestamp(floor(extract(epoch FROM bucket) / 604800) * 604800)",
    "sqlite": "strftime('%Y-%m-%d %H:%M:%S.000000', "
    "CAST(strftime('%s', bucket) AS INTEGER) / 604800 * 604800, 'unixepoch')",
}


def upgrade() -> None:
    week = WEEK["postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"]
    counters = ", ".join(COUNTERS)
    sums = ", ".join(f"sum({c})" for c in COUNTERS)
    op.execute(
        f"""INSERT INTO analytics_counters (workspace_id, dim, k1, k2, grain, bucket, {counters})
        SELECT workspace_id, dim, k1, k2, 'k', {week}, {sums}
        FROM analytics_counters WHERE grain = 'd'
        GROUP BY workspace_id, dim, k1, k2, {week}"""
    )


def downgrade() -> None:
    op.execute("DELETE FROM analytics_counters WHERE grain = 'k'")
