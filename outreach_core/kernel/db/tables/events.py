"""Events: the outbox every change records its events in, and webhook endpoints with their deliveries."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import JsonType, UtcDateTime

outbox = Table(
    "outbox",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("id", ID, nullable=False, unique=True),
    ws_fk(),
    Column("kind", String(40), nullable=False),
    Column("payload", JsonType, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("dispatched_at", UtcDateTime, nullable=True),
    Index("ix_outbox_pending", "dispatched_at", "seq"),
)


webhooks = Table(
    "webhooks",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("url", String(2000), nullable=False),
    Column("description", String(500), nullable=True),
    Column("events", JsonType, nullable=False),  # event kinds
    Column("enabled", Boolean, nullable=False, server_default="1"),
    Column("disabled_reason", String(500), nullable=True),
    # MultiFernet tokens under OUTREACH_SECRET_KEY; never serialized in a response
    Column("secret_encrypted", Text, nullable=False),
    Column("previous_secret_encrypted", Text, nullable=True),  # still signed with during a rotation
    Column("previous_secret_until", UtcDateTime, nullable=True),
    Column("failing_since", UtcDateTime, nullable=True),  # first failed attempt since the last success
    Column("failed_attempts", Integer, nullable=False, server_default="0"),  # since the last success
    Column("last_delivery_at", UtcDateTime, nullable=True),
    Column("last_status", Integer, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index("ix_webhooks_ws_created", "workspace_id", "created_at", "id"),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("webhook_id", ID, ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False),
    Column("event_id", ID, nullable=False),
    Column("type", String(40), nullable=False),
    Column("body", Text, nullable=False),  # the exact body posted (UTF-8 JSON)
    Column("status", String(10), nullable=False),  # pending | delivered | failed
    Column("attempts", Integer, nullable=False, server_default="0"),  # every POST, redeliveries included
    Column("round_attempts", Integer, nullable=False, server_default="0"),  # since queued or redelivered
    # when it is due (pending only; null once delivered or failed). A worker that claims it moves it to the
    # end of its lease, so a crash between the POST and its record makes it due again (at least once).
    Column("next_attempt_at", UtcDateTime, nullable=True),
    Column("claimed_until", UtcDateTime, nullable=True),  # a worker is posting it until then
    Column("last_status", Integer, nullable=True),
    Column("last_error", String(500), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("delivered_at", UtcDateTime, nullable=True),
    UniqueConstraint("webhook_id", "event_id"),
    # the pending deliveries of one endpoint by due time (the worker claims per endpoint)
    Index(
        "ix_webhook_deliveries_due",
        "webhook_id",
        "next_attempt_at",
        sqlite_where=text("next_attempt_at IS NOT NULL"),
        postgresql_where=text("next_attempt_at IS NOT NULL"),
    ),
    # is anything due at all (the idle worker's check)
    Index(
        "ix_webhook_deliveries_next",
        "next_attempt_at",
        sqlite_where=text("next_attempt_at IS NOT NULL"),
        postgresql_where=text("next_attempt_at IS NOT NULL"),
    ),
    # an endpoint's deliveries newest first, and its 7-day counts by status, from the index alone
    Index("ix_webhook_deliveries_hook_created", "webhook_id", "created_at", "id", "status", "workspace_id"),
    Index("ix_webhook_deliveries_created", "created_at"),  # the 30-day purge
)

webhook_attempts = Table(
    "webhook_attempts",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("delivery_id", ID, ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Column("status", Integer, nullable=False),  # HTTP status; 0 = no answer
    Column("ms", Integer, nullable=False),
    Column("error", String(500), nullable=True),
    Index("ix_webhook_attempts_delivery", "delivery_id", "at"),
)
