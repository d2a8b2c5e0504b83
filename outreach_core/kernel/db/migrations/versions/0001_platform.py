"""platform: workspaces, members, api keys, oauth, outbox

Revision ID: 0001
Revises:
Create Date: 2026-11-21 14:11:23.952782
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import outreach_core.kernel.db.types

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("uri", sa.String(length=2000), nullable=True),
        sa.Column("info", outreach_core.kernel.db.types.JsonType(), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_clients")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("email", name=op.f("uq_users_email")),
    )
    op.create_table(
        "workspaces",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("slug", sa.String(length=60), nullable=False),
        sa.Column("timezone", sa.String(length=64), server_default="UTC", nullable=False),
        sa.Column("unsubscribe_mode", sa.String(length=16), server_default="link", nullable=False),
        sa.Column("ai_labels", sa.Boolean(), server_default="1", nullable=False),
        sa.Column("own_ai_key", sa.String(length=16), nullable=True),
        sa.Column("plan", sa.String(length=16), nullable=True),
        sa.Column("plan_interval", sa.String(length=8), nullable=True),
        sa.Column("plan_status", sa.String(length=16), nullable=True),
        sa.Column("plan_renews_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column(
            "plan_period_start", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True
        ),
        sa.Column("cancel_at_period_end", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspaces")),
        sa.UniqueConstraint("slug", name=op.f("uq_workspaces_slug")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("created_by", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=True),
        sa.Column("start", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("expires_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by"], ["users.id"], name=op.f("fk_api_keys_created_by_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_api_keys_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(
            "ix_api_keys_workspace_id_created_at", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "invitations",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=True),
        sa.Column("invited_by", sa.String(length=40), nullable=True),
        sa.Column("expires_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["invited_by"], ["users.id"], name=op.f("fk_invitations_invited_by_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_invitations_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invitations")),
        sa.UniqueConstraint("workspace_id", "email", name=op.f("uq_invitations_workspace_id_email")),
    )
    op.create_table(
        "members",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_members_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_members_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_members")),
        sa.UniqueConstraint("workspace_id", "user_id", name=op.f("uq_members_workspace_id_user_id")),
    )
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.create_index("ix_members_user_id", ["user_id"], unique=False)

    op.create_table(
        "oauth_grants",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.String(length=500), server_default="", nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["oauth_clients.id"],
            name=op.f("fk_oauth_grants_client_id_oauth_clients"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_oauth_grants_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_oauth_grants_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_grants")),
    )
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.create_index(
            "ix_oauth_grants_workspace_id_client_id", ["workspace_id", "client_id"], unique=False
        )

    op.create_table(
        "outbox",
        sa.Column(
            "seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("payload", outreach_core.kernel.db.types.JsonType(), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("dispatched_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_outbox_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_outbox")),
        sa.UniqueConstraint("id", name=op.f("uq_outbox_id")),
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.create_index("ix_outbox_pending", ["dispatched_at", "seq"], unique=False)

    op.create_table(
        "oauth_codes",
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("grant_id", sa.String(length=40), nullable=False),
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("redirect_uri", sa.String(length=2000), nullable=False),
        sa.Column("redirect_uri_explicit", sa.Boolean(), nullable=False),
        sa.Column("code_challenge", sa.String(length=128), nullable=False),
        sa.Column("scopes", sa.String(length=500), server_default="", nullable=False),
        sa.Column("resource", sa.String(length=2000), nullable=True),
        sa.Column("expires_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("used_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["oauth_grants.id"],
            name=op.f("fk_oauth_codes_grant_id_oauth_grants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_oauth_codes_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("code_hash", name=op.f("pk_oauth_codes")),
    )
    op.create_table(
        "oauth_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("grant_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.String(length=500), server_default="", nullable=False),
        sa.Column("resource", sa.String(length=2000), nullable=True),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["oauth_grants.id"],
            name=op.f("fk_oauth_tokens_grant_id_oauth_grants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_oauth_tokens_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_oauth_tokens")),
    )
    with op.batch_alter_table("oauth_tokens", schema=None) as batch_op:
        batch_op.create_index("ix_oauth_tokens_grant_id", ["grant_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("oauth_tokens", schema=None) as batch_op:
        batch_op.drop_index("ix_oauth_tokens_grant_id")

    op.drop_table("oauth_tokens")
    op.drop_table("oauth_codes")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_pending")

    op.drop_table("outbox")
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.drop_index("ix_oauth_grants_workspace_id_client_id")

    op.drop_table("oauth_grants")
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.drop_index("ix_members_user_id")

    op.drop_table("members")
    op.drop_table("invitations")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_api_keys_workspace_id_created_at")

    op.drop_table("api_keys")
    op.drop_table("workspaces")
    op.drop_table("users")
    op.drop_table("oauth_clients")
