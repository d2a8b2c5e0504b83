"""Billing, onboarding and AI writing (issue 29): dedicated IP add-ons, the Stripe customer and subscription,
the workspace's own AI key and onboarding answers on `workspaces`; `offer_profiles`, `ai_drafts` (the AI
draft allowance) and `billing_events` (Stripe events applied once)

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN on both engines (no table copy on SQLite: `workspaces` is referenced by every table).
    for column in (
        sa.Column("dedicated_ip_addons", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("billing_customer_id", sa.String(length=255), nullable=True),
        sa.Column("billing_subscription_id", sa.String(length=255), nullable=True),
        sa.Column("billing_payer_id", sa.String(length=40), nullable=True),
        sa.Column("billing_event_at", UtcDateTime(), nullable=True),
        sa.Column("ai_key_encrypted", sa.Text(), nullable=True),
        sa.Column("audience", sa.String(length=8), nullable=True),
        sa.Column("sending_domain", sa.String(length=300), nullable=True),
        sa.Column("expected_volume", sa.Integer(), nullable=True),
    ):
        op.add_column("workspaces", column)
    op.create_index("ix_workspaces_plan_renews_at", "workspaces", ["plan_renews_at"])
    op.create_table(
        "offer_profiles",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("company", sa.String(length=120), nullable=False, server_default=""),
        sa.Column("product", sa.Text(), nullable=False, server_default=""),
        sa.Column("audience", sa.Text(), nullable=False, server_default=""),
        sa.Column("problem", sa.Text(), nullable=False, server_default=""),
        sa.Column("proof", sa.Text(), nullable=False, server_default=""),
        sa.Column("cta", sa.String(length=300), nullable=False, server_default=""),
        sa.Column("tone", sa.String(length=8), nullable=False, server_default="plain"),
        sa.Column("avoid", sa.Text(), nullable=False, server_default=""),
        sa.Column("source_url", sa.String(length=300), nullable=True),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("updated_by", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_offer_profiles_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", name="pk_offer_profiles"),
    )
    op.create_table(
        "ai_drafts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("own_key", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_ai_drafts_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_ai_drafts"),
    )
    op.create_index("ix_ai_drafts_ws_created", "ai_drafts", ["workspace_id", "created_at"])
    op.create_table(
        "billing_events",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=80), nullable=False),
        sa.Column("received_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_billing_events"),
    )


def downgrade() -> None:
    op.drop_table("billing_events")
    op.drop_index("ix_ai_drafts_ws_created", table_name="ai_drafts")
    op.drop_table("ai_drafts")
    op.drop_table("offer_profiles")
    op.drop_index("ix_workspaces_plan_renews_at", table_name="workspaces")
    for column in (
        "expected_volume",
        "sending_domain",
        "audience",
        "ai_key_encrypted",
        "billing_event_at",
        "billing_payer_id",
        "billing_subscription_id",
        "billing_customer_id",
        "dedicated_ip_addons",
    ):
        op.drop_column("workspaces", column)  # ALTER TABLE ... DROP COLUMN (SQLite 3.35 and later)
