"""Every table of the service, as SQLAlchemy Core tables on one `MetaData`.

A table with a `workspace_id` column is workspace-owned: operations read and change it only through
`outreach_core.context.scoped()`. Tables without it are global (users, OAuth clients).
Alembic migrations in `db/migrations/versions` create exactly this schema; a test compares the two.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from outreach_core.db.types import JsonType, UtcDateTime

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

ID = String(40)


def _ws_fk() -> Column[str]:
    return Column("workspace_id", ID, ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False)


# --- workspace -------------------------------------------------------------------------------------------

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
    Column("created_at", UtcDateTime, nullable=False),
)

members = Table(
    "members",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
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
    _ws_fk(),
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
    _ws_fk(),
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
    _ws_fk(),
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
    _ws_fk(),
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
    _ws_fk(),
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

# --- outbox ----------------------------------------------------------------------------------------------

outbox = Table(
    "outbox",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("id", ID, nullable=False, unique=True),
    _ws_fk(),
    Column("kind", String(40), nullable=False),
    Column("payload", JsonType, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("dispatched_at", UtcDateTime, nullable=True),
    Index("ix_outbox_pending", "dispatched_at", "seq"),
)

__all__ = [
    "Text",
    "api_keys",
    "invitations",
    "members",
    "metadata",
    "oauth_clients",
    "oauth_codes",
    "oauth_grants",
    "oauth_tokens",
    "outbox",
    "users",
    "workspaces",
]
