"""Deliverability (issue 27): a workspace's sending domains with their latest check report and history."""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, PrimaryKeyConstraint, String, Table

from outreach_core.kernel.db.tables.base import metadata, ws_fk
from outreach_core.kernel.db.types import JsonType, UtcDateTime

sending_domains = Table(
    "sending_domains",
    metadata,
    ws_fk(),
    Column("domain", String(253), nullable=False),  # lower-case A-labels
    Column("report", JsonType, nullable=True),  # the latest check report (wire JSON); null until checked
    Column("score", Integer, nullable=True),
    Column("grade", String(1), nullable=True),
    Column("checked_at", UtcDateTime, nullable=True),
    Column("history", JsonType, nullable=False),  # up to 30 earlier [{score, checkedAt}], oldest first
    Column("next_check_at", UtcDateTime, nullable=True),  # when the `domains` worker checks it again
    Column("created_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("workspace_id", "domain", name="pk_sending_domains"),
    Index("ix_sending_domains_next_check_at", "next_check_at"),
)
