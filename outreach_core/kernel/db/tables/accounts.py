"""Workspaces, people and their credentials: users, members, invitations, API keys, OAuth."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import JsonType, UtcDateTime

users = Table(
    "users",
    metadata,
    Column("id", ID, primary_key=True),
    Column("email", String(320), nullable=False, unique=True),
    Column("name", String(120), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

workspaces = Table(
    "workspaces",
    metadata,
    Column("id", ID, primary_key=True),
    Column("name", String(60), nullable=False),
    Column("slug", String(60), nullable=False, unique=True),
    Column("timezone", String(64), nullable=False, server_default="UTC"),
    # sending settings
    Column("unsubscribe_mode", String(16), nullable=False, server_default="link"),
    Column("ai_labels", Boolean, nullable=False, server_default="1"),
    Column("own_ai_key", String(16), nullable=True),
    # billing, `local` provider: set by the operator (`outreach init --plan`, `outreach plan set`)
    Column("plan", String(16), nullable=True),
    Column("plan_interval", String(8), nullable=True),
    Column("plan_status", String(16), nullable=True),
    Column("plan_renews_at", UtcDateTime, nullable=True),
    Column("plan_period_start", UtcDateTime, nullable=True),
    Column("cancel_at_period_end", Boolean, nullable=False, server_default="0"),
    # dedicated sending IPs bought on top of the plan's (docs/billing.md)
    Column("dedicated_ip_addons", Integer, nullable=False, server_default="0"),
    # billing, `stripe` provider: the customer and subscription, and the newest event applied (events can
    # arrive out of order; older ones are ignored)
    Column("billing_customer_id", String(255), nullable=True),
    Column("billing_subscription_id", String(255), nullable=True),
    Column("billing_payer_id", ID, nullable=True),  # the user who chose the plan (payerIsYou)
    Column("billing_event_at", UtcDateTime, nullable=True),
    # the workspace's own AI key (`own_ai_key` names its provider): a MultiFernet token, never serialized
    Column("ai_key_encrypted", Text, nullable=True),
    # onboarding answers (docs/onboarding.md)
    Column("audience", String(8), nullable=True),
    Column("sending_domain", String(300), nullable=True),
    Column("expected_volume", Integer, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_workspaces_plan_renews_at", "plan_renews_at"),  # the billing worker's periods to roll over
)

members = Table(
    "members",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("user_id", ID, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("role", String(8), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "user_id"),
    Index("ix_members_user_id", "user_id"),
)

invitations = Table(
    "invitations",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("email", String(320), nullable=False),
    Column("role", String(8), nullable=True),
    Column("invited_by", ID, ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "email"),
)

# --- API keys --------------------------------------------------------------------------------------------

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("created_by", ID, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(60), nullable=True),
    Column("start", String(16), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("last_used_at", UtcDateTime, nullable=True),
    Column("expires_at", UtcDateTime, nullable=True),
    Column("revoked_at", UtcDateTime, nullable=True),
    Index("ix_api_keys_workspace_id_created_at", "workspace_id", "created_at"),
)

# --- OAuth (MCP clients) ---------------------------------------------------------------------------------

oauth_clients = Table(
    "oauth_clients",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(200), nullable=True),
    Column("uri", String(2000), nullable=True),
    Column("info", JsonType, nullable=False),  # RFC 7591 client information as registered
    Column("created_at", UtcDateTime, nullable=False),
)

oauth_grants = Table(
    "oauth_grants",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("user_id", ID, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("client_id", String(64), ForeignKey("oauth_clients.id", ondelete="CASCADE"), nullable=False),
    Column("scopes", String(500), nullable=False, server_default=""),
    Column("created_at", UtcDateTime, nullable=False),
    Column("last_used_at", UtcDateTime, nullable=True),
    Column("revoked_at", UtcDateTime, nullable=True),
    Index("ix_oauth_grants_workspace_id_client_id", "workspace_id", "client_id"),
)

oauth_codes = Table(
    "oauth_codes",
    metadata,
    Column("code_hash", String(64), primary_key=True),
    ws_fk(),
    Column("grant_id", ID, ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False),
    Column("client_id", String(64), nullable=False),
    Column("redirect_uri", String(2000), nullable=False),
    Column("redirect_uri_explicit", Boolean, nullable=False),
    Column("code_challenge", String(128), nullable=False),
    Column("scopes", String(500), nullable=False, server_default=""),
    Column("resource", String(2000), nullable=True),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("used_at", UtcDateTime, nullable=True),
)

oauth_tokens = Table(
    "oauth_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    ws_fk(),
    Column("grant_id", ID, ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(8), nullable=False),  # access | refresh
    Column("client_id", String(64), nullable=False),
    Column("scopes", String(500), nullable=False, server_default=""),
    Column("resource", String(2000), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("revoked_at", UtcDateTime, nullable=True),
    Index("ix_oauth_tokens_grant_id", "grant_id"),
)
