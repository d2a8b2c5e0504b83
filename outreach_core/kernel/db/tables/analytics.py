"""Analytics rollups (issue 28, docs/analytics.md): counters in hourly, daily and weekly UTC buckets, and
the replies they count (one per lead and campaign), so that no analytics request scans the send ledger."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, String, Table

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import UtcDateTime

COUNTERS = ("sent", "replied", "positive", "negative", "neutral", "warning", "bounced", "opened", "won")
"""The counted things of one rollup row (`replied` split by the current label type of the reply's thread)."""

analytics_counters = Table(
    "analytics_counters",
    metadata,
    # One row per (dimension, key, grain, bucket): `dim` names what the row counts by (`w` the workspace,
    # `c` campaign, `m` mailbox, `e` ESP, `v` campaign+step:variant, `cm` campaign+mailbox, `ce` campaign+ESP,
    # `hm` weekday+hour of replies in the lead's zone, `co` country of replies); `grain` is `h` (the UTC
    # hour starting at `bucket`), `d` (the UTC day), `k` (the 7-day UTC block from the epoch, migration 0031)
    # or `t` (all time, bucket = the epoch).
    ws_fk(),
    Column("dim", String(2), nullable=False),
    Column("k1", String(64), nullable=False),
    Column("k2", String(64), nullable=False),
    Column("grain", String(1), nullable=False),
    Column("bucket", UtcDateTime, nullable=False),
    *(Column(name, BigInteger, nullable=False, server_default="0") for name in COUNTERS),
    Index(
        "ux_analytics_counters_key",
        "workspace_id",
        "dim",
        "k1",
        "k2",
        "grain",
        "bucket",
        unique=True,
    ),
    # a period's rows of one dimension; on PostgreSQL it carries the counters (index-only scans)
    Index(
        "ix_analytics_counters_period",
        "workspace_id",
        "dim",
        "grain",
        "bucket",
        "k1",
        "k2",
        postgresql_include=list(COUNTERS),
    ),
)

analytics_replies = Table(
    "analytics_replies",
    metadata,
    # The reply counted for a lead in a campaign (its first received reply to a campaign email), with what
    # it was counted under, so a later label change or a rebuild moves exactly that count.
    ws_fk(),
    Column("campaign_id", ID, nullable=False),
    Column("lead_id", ID, nullable=False),
    Column("message_id", ID, nullable=False),
    Column("thread_id", ID, nullable=False),
    Column("signature", String(400), nullable=False),  # the counted keys and sentiment, compared on sync
    Index("ux_analytics_replies_key", "workspace_id", "lead_id", "campaign_id", unique=True),
)
