"""AI writing and billing bookkeeping: the offer profile the writing tools draft from, every AI draft made
(counted against the plan's monthly allowance), and the Stripe events already applied."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, ForeignKey, Index, String, Table, Text

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import UtcDateTime

offer_profiles = Table(
    "offer_profiles",
    metadata,
    # one profile a workspace
    Column("workspace_id", ID, ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True),
    Column("company", String(120), nullable=False, server_default=""),
    Column("product", Text, nullable=False, server_default=""),
    Column("audience", Text, nullable=False, server_default=""),
    Column("problem", Text, nullable=False, server_default=""),
    Column("proof", Text, nullable=False, server_default=""),
    Column("cta", String(300), nullable=False, server_default=""),
    Column("tone", String(8), nullable=False, server_default="plain"),
    Column("avoid", Text, nullable=False, server_default=""),
    Column("source_url", String(300), nullable=True),  # the website it was drafted from, if any
    Column("updated_at", UtcDateTime, nullable=False),
    Column("updated_by", ID, nullable=True),
)

ai_drafts = Table(
    "ai_drafts",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("kind", String(16), nullable=False),  # write_sequence | draft_offer
    Column("own_key", Boolean, nullable=False),  # made with the workspace's own AI key: not counted
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_ai_drafts_ws_created", "workspace_id", "created_at"),
)

billing_events = Table(
    "billing_events",
    metadata,
    Column("id", String(255), primary_key=True),  # the provider's event id (Stripe's `evt_...`)
    Column("kind", String(80), nullable=False),
    Column("received_at", UtcDateTime, nullable=False),
)
