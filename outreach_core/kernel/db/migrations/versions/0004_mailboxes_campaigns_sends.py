"""mailboxes, campaigns (steps, variants, leads, counters), the send ledger

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21 16:32:37.566435
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import outreach_core.kernel.db.types

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

KEY = "campaign_id, status, step"

# Campaign-lead counters per (campaign, status, step), kept exact like lead_counters (migration 0003).
SQLITE = [
    f"""CREATE TRIGGER campaign_lead_counters_insert AFTER INSERT ON campaign_leads BEGIN
        INSERT INTO campaign_lead_counters ({KEY}, n) VALUES (new.campaign_id, new.status, new.step, 1)
        ON CONFLICT ({KEY}) DO UPDATE SET n = n + 1; END""",
    """CREATE TRIGGER campaign_lead_counters_delete AFTER DELETE ON campaign_leads BEGIN
        UPDATE campaign_lead_counters SET n = n - 1
        WHERE campaign_id = old.campaign_id AND status = old.status AND step = old.step; END""",
    f"""CREATE TRIGGER campaign_lead_counters_update AFTER UPDATE OF status, step ON campaign_leads
        WHEN old.status IS NOT new.status OR old.step IS NOT new.step
        BEGIN
        UPDATE campaign_lead_counters SET n = n - 1
        WHERE campaign_id = old.campaign_id AND status = old.status AND step = old.step;
        INSERT INTO campaign_lead_counters ({KEY}, n) VALUES (new.campaign_id, new.status, new.step, 1)
        ON CONFLICT ({KEY}) DO UPDATE SET n = n + 1; END""",
]

POSTGRES = [
    f"""CREATE FUNCTION campaign_lead_counters_apply() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE campaign_lead_counters c SET n = c.n - d.k
        FROM (SELECT {KEY}, count(*) AS k FROM old_rows GROUP BY {KEY}) d
        WHERE c.campaign_id = d.campaign_id AND c.status = d.status AND c.step = d.step;
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO campaign_lead_counters ({KEY}, n)
        SELECT {KEY}, count(*) FROM new_rows GROUP BY {KEY}
        ON CONFLICT ({KEY}) DO UPDATE SET n = campaign_lead_counters.n + EXCLUDED.n;
      END IF;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER campaign_lead_counters_insert AFTER INSERT ON campaign_leads "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_lead_counters_apply()",
    "CREATE TRIGGER campaign_lead_counters_delete AFTER DELETE ON campaign_leads "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION campaign_lead_counters_apply()",
    "CREATE TRIGGER campaign_lead_counters_update AFTER UPDATE ON campaign_leads "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION campaign_lead_counters_apply()",
]
TRIGGERS = ("campaign_lead_counters_insert", "campaign_lead_counters_delete", "campaign_lead_counters_update")


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=10), server_default="draft", nullable=False),
        sa.Column("paused_reason", sa.String(length=500), nullable=True),
        sa.Column("timezone_fallback", sa.String(length=64), server_default="UTC", nullable=False),
        sa.Column("window_start", sa.Integer(), server_default="540", nullable=False),
        sa.Column("window_end", sa.Integer(), server_default="1020", nullable=False),
        sa.Column("days", sa.Integer(), server_default="31", nullable=False),
        sa.Column("daily_cap", sa.Integer(), nullable=True),
        sa.Column("bounce_threshold", sa.Float(), nullable=True),
        sa.Column("esp_matching", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("stop_on_reply", sa.Boolean(), server_default="1", nullable=False),
        sa.Column("track_clicks", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("track_opens", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("start_on", sa.String(length=10), nullable=True),
        sa.Column("end_on", sa.String(length=10), nullable=True),
        sa.Column("stop_for_company", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("skip_risky", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("started_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("completed_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_campaigns_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaigns")),
    )
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.create_index("ix_campaigns_status", ["status"], unique=False)
        batch_op.create_index("ix_campaigns_ws_created", ["workspace_id", "created_at", "id"], unique=False)

    op.create_table(
        "mailboxes",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("display_name", sa.String(length=120), nullable=True),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=12), server_default="active", nullable=False),
        sa.Column("status_reason", sa.String(length=500), nullable=True),
        sa.Column("daily_limit", sa.Integer(), server_default="30", nullable=False),
        sa.Column("ramp_enabled", sa.Boolean(), server_default="1", nullable=False),
        sa.Column("ramp_start", sa.Integer(), server_default="5", nullable=False),
        sa.Column("ramp_increment", sa.Integer(), server_default="2", nullable=False),
        sa.Column("ramp_started_on", sa.String(length=10), nullable=False),
        sa.Column("min_gap_s", sa.Integer(), server_default="60", nullable=False),
        sa.Column("max_gap_s", sa.Integer(), server_default="180", nullable=False),
        sa.Column("timezone", sa.String(length=64), server_default="UTC", nullable=False),
        sa.Column("signature", sa.Text(), nullable=True),
        sa.Column("smtp_host", sa.String(length=253), nullable=False),
        sa.Column("smtp_port", sa.Integer(), nullable=False),
        sa.Column("smtp_security", sa.String(length=8), nullable=False),
        sa.Column("smtp_user", sa.String(length=320), nullable=False),
        sa.Column("imap_host", sa.String(length=253), nullable=False),
        sa.Column("imap_port", sa.Integer(), nullable=False),
        sa.Column("imap_security", sa.String(length=8), nullable=False),
        sa.Column("imap_user", sa.String(length=320), nullable=False),
        sa.Column("password_encrypted", sa.Text(), nullable=False),
        sa.Column("inbox_poll", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("last_tested_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("last_synced_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("sync_error", sa.String(length=500), nullable=True),
        sa.Column("sent_day", sa.String(length=10), nullable=True),
        sa.Column("sent_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_sent_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("next_send_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_mailboxes_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mailboxes")),
        sa.UniqueConstraint("workspace_id", "email", name=op.f("uq_mailboxes_workspace_id_email")),
    )
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        batch_op.create_index("ix_mailboxes_status_next", ["status", "next_send_at"], unique=False)
        batch_op.create_index("ix_mailboxes_ws_created", ["workspace_id", "created_at", "id"], unique=False)

    op.create_table(
        "campaign_lead_counters",
        sa.Column("campaign_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=14), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_campaign_lead_counters_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("campaign_id", "status", "step", name=op.f("pk_campaign_lead_counters")),
    )
    op.create_table(
        "campaign_leads",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("campaign_id", sa.String(length=40), nullable=False),
        sa.Column("lead_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=14), server_default="not_contacted", nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=True),
        sa.Column("step", sa.Integer(), server_default="0", nullable=False),
        sa.Column("mailbox_id", sa.String(length=40), nullable=True),
        sa.Column("next_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("last_sent_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("thread_message_id", sa.String(length=255), nullable=True),
        sa.Column("last_message_id", sa.String(length=255), nullable=True),
        sa.Column("added_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_campaign_leads_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_campaign_leads_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["mailbox_id"],
            ["mailboxes.id"],
            name=op.f("fk_campaign_leads_mailbox_id_mailboxes"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_campaign_leads_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaign_leads")),
        sa.UniqueConstraint("campaign_id", "lead_id", name=op.f("uq_campaign_leads_campaign_id_lead_id")),
    )
    with op.batch_alter_table("campaign_leads", schema=None) as batch_op:
        batch_op.create_index("ix_campaign_leads_due", ["campaign_id", "status", "next_at"], unique=False)
        batch_op.create_index("ix_campaign_leads_lead", ["lead_id"], unique=False)
        batch_op.create_index(
            "ix_campaign_leads_list", ["campaign_id", "added_at", "id", "workspace_id"], unique=False
        )
        batch_op.create_index(
            "ix_campaign_leads_status_list",
            ["campaign_id", "status", "added_at", "id", "workspace_id"],
            unique=False,
        )
        batch_op.create_index("ix_campaign_leads_mailbox", ["mailbox_id"], unique=False)

    op.create_table(
        "campaign_mailboxes",
        sa.Column("campaign_id", sa.String(length=40), nullable=False),
        sa.Column("mailbox_id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_campaign_mailboxes_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["mailbox_id"],
            ["mailboxes.id"],
            name=op.f("fk_campaign_mailboxes_mailbox_id_mailboxes"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_campaign_mailboxes_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("campaign_id", "mailbox_id", name=op.f("pk_campaign_mailboxes")),
    )
    with op.batch_alter_table("campaign_mailboxes", schema=None) as batch_op:
        batch_op.create_index("ix_campaign_mailboxes_mailbox", ["mailbox_id"], unique=False)

    op.create_table(
        "campaign_steps",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("campaign_id", sa.String(length=40), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("wait_days", sa.Integer(), server_default="0", nullable=False),
        sa.Column("same_thread", sa.Boolean(), server_default="1", nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_campaign_steps_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_campaign_steps_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaign_steps")),
    )
    with op.batch_alter_table("campaign_steps", schema=None) as batch_op:
        batch_op.create_index("ix_campaign_steps_campaign", ["campaign_id", "position"], unique=False)

    op.create_table(
        "campaign_variants",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("campaign_id", sa.String(length=40), nullable=False),
        sa.Column("step_id", sa.String(length=40), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("subject", sa.Text(), server_default="", nullable=False),
        sa.Column("body", sa.Text(), server_default="", nullable=False),
        sa.Column("weight", sa.Integer(), server_default="1", nullable=False),
        sa.Column("active", sa.Boolean(), server_default="1", nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_campaign_variants_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["step_id"],
            ["campaign_steps.id"],
            name=op.f("fk_campaign_variants_step_id_campaign_steps"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_campaign_variants_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaign_variants")),
    )
    with op.batch_alter_table("campaign_variants", schema=None) as batch_op:
        batch_op.create_index("ix_campaign_variants_campaign", ["campaign_id"], unique=False)
        batch_op.create_index("ix_campaign_variants_step", ["step_id", "position"], unique=False)

    op.create_table(
        "sends",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("campaign_id", sa.String(length=40), nullable=False),
        sa.Column("campaign_lead_id", sa.String(length=40), nullable=True),
        sa.Column("lead_id", sa.String(length=40), nullable=False),
        sa.Column("mailbox_id", sa.String(length=40), nullable=True),
        sa.Column("step_id", sa.String(length=40), nullable=True),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("variant_id", sa.String(length=40), nullable=True),
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("to_email", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("body_html", sa.Text(), nullable=False),
        sa.Column("body_text", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("error", sa.String(length=1000), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("sent_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"], ["campaigns.id"], name=op.f("fk_sends_campaign_id_campaigns"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["campaign_lead_id"],
            ["campaign_leads.id"],
            name=op.f("fk_sends_campaign_lead_id_campaign_leads"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_sends_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["mailbox_id"], ["mailboxes.id"], name=op.f("fk_sends_mailbox_id_mailboxes"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_sends_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sends")),
        sa.UniqueConstraint("campaign_lead_id", "step", name=op.f("uq_sends_campaign_lead_id_step")),
        sa.UniqueConstraint("message_id", name=op.f("uq_sends_message_id")),
    )
    with op.batch_alter_table("sends", schema=None) as batch_op:
        batch_op.create_index("ix_sends_campaign_lead", ["campaign_lead_id", "created_at"], unique=False)
        batch_op.create_index("ix_sends_mailbox_sent", ["mailbox_id", "sent_at"], unique=False)
        batch_op.create_index("ix_sends_status", ["status", "created_at"], unique=False)
        batch_op.create_index("ix_sends_ws_sent", ["workspace_id", "sent_at"], unique=False)

    for statement in SQLITE if op.get_bind().dialect.name == "sqlite" else POSTGRES:
        op.execute(statement)


def downgrade() -> None:
    on_table = "" if op.get_bind().dialect.name == "sqlite" else " ON campaign_leads"
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}{on_table}")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS campaign_lead_counters_apply()")
    with op.batch_alter_table("sends", schema=None) as batch_op:
        batch_op.drop_index("ix_sends_ws_sent")
        batch_op.drop_index("ix_sends_status")
        batch_op.drop_index("ix_sends_mailbox_sent")
        batch_op.drop_index("ix_sends_campaign_lead")

    op.drop_table("sends")
    with op.batch_alter_table("campaign_variants", schema=None) as batch_op:
        batch_op.drop_index("ix_campaign_variants_step")
        batch_op.drop_index("ix_campaign_variants_campaign")

    op.drop_table("campaign_variants")
    with op.batch_alter_table("campaign_steps", schema=None) as batch_op:
        batch_op.drop_index("ix_campaign_steps_campaign")

    op.drop_table("campaign_steps")
    with op.batch_alter_table("campaign_mailboxes", schema=None) as batch_op:
        batch_op.drop_index("ix_campaign_mailboxes_mailbox")

    op.drop_table("campaign_mailboxes")
    with op.batch_alter_table("campaign_leads", schema=None) as batch_op:
        batch_op.drop_index("ix_campaign_leads_mailbox")
        batch_op.drop_index("ix_campaign_leads_status_list")
        batch_op.drop_index("ix_campaign_leads_list")
        batch_op.drop_index("ix_campaign_leads_lead")
        batch_op.drop_index("ix_campaign_leads_due")

    op.drop_table("campaign_leads")
    op.drop_table("campaign_lead_counters")
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        batch_op.drop_index("ix_mailboxes_ws_created")
        batch_op.drop_index("ix_mailboxes_status_next")

    op.drop_table("mailboxes")
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.drop_index("ix_campaigns_ws_created")
        batch_op.drop_index("ix_campaigns_status")

    op.drop_table("campaigns")
