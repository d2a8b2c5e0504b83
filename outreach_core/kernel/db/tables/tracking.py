"""Click and open tracking: one row per request to a tracking link (docs/tracking.md)."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, String, Table, Text

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import UtcDateTime

tracking_events = Table(
    "tracking_events",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("send_id", ID, ForeignKey("sends.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(5), nullable=False),  # open | click
    Column("at", UtcDateTime, nullable=False),
    Column("url", Text, nullable=True),  # the link's target (clicks)
    # null: a person; else why it is not counted as one: head | scanner | too_soon | apple_privacy
    Column("flag", String(16), nullable=True),
    Column("user_agent", String(300), nullable=True),
    Index("ix_tracking_events_send", "send_id", "at"),
)
