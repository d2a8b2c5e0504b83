"""leads, lists, labels, suppressions, imports

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 14:56:57.235211
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import outreach_core.kernel.db.types

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "domain_cache",
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("esp", sa.String(length=12), nullable=False),
        sa.Column("mx_host", sa.String(length=253), nullable=True),
        sa.Column("has_mx", sa.Boolean(), nullable=False),
        sa.Column("checked_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("domain", name=op.f("pk_domain_cache")),
    )
    op.create_table(
        "labels",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("type", sa.String(length=8), server_default="neutral", nullable=False),
        sa.Column("color", sa.String(length=7), nullable=True),
        sa.Column("triggers", outreach_core.kernel.db.types.JsonType(), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_labels_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_labels")),
        sa.UniqueConstraint("workspace_id", "name", name=op.f("uq_labels_workspace_id_name")),
    )
    op.create_table(
        "leads",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("first_name", sa.String(length=200), nullable=True),
        sa.Column("last_name", sa.String(length=200), nullable=True),
        sa.Column("sort_name", sa.String(length=401), server_default="", nullable=False),
        sa.Column("company", sa.String(length=300), nullable=True),
        sa.Column("title", sa.String(length=300), nullable=True),
        sa.Column("website", sa.String(length=2000), nullable=True),
        sa.Column("phone", sa.String(length=64), nullable=True),
        sa.Column("linkedin", sa.String(length=2000), nullable=True),
        sa.Column("country", sa.String(length=2), nullable=True),
        sa.Column("country_source", sa.String(length=8), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=True),
        sa.Column("custom", outreach_core.kernel.db.types.JsonType(), nullable=False),
        sa.Column("search_text", sa.Text(), server_default="", nullable=False),
        sa.Column("esp", sa.String(length=12), server_default="unknown", nullable=False),
        sa.Column("mx_host", sa.String(length=253), nullable=True),
        sa.Column("verify_status", sa.String(length=12), server_default="unknown", nullable=False),
        sa.Column("verify_reason", sa.String(length=200), nullable=True),
        sa.Column("verify_api", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("verified_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), server_default="active", nullable=False),
        sa.Column("won_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("won_value", sa.Float(), nullable=True),
        sa.Column("won_campaign_id", sa.String(length=40), nullable=True),
        sa.Column("import_id", sa.String(length=40), nullable=True),
        sa.Column("enriched_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_leads_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_leads")),
        sa.UniqueConstraint("workspace_id", "email", name=op.f("uq_leads_workspace_id_email")),
    )
    with op.batch_alter_table("leads", schema=None) as batch_op:
        batch_op.create_index("ix_leads_import", ["import_id"], unique=False)
        batch_op.create_index("ix_leads_pending_enrichment", ["enriched_at", "workspace_id"], unique=False)
        batch_op.create_index("ix_leads_ws_company", ["workspace_id", "company", "id"], unique=False)
        batch_op.create_index("ix_leads_ws_created", ["workspace_id", "created_at", "id"], unique=False)
        batch_op.create_index("ix_leads_ws_domain", ["workspace_id", "domain"], unique=False)
        batch_op.create_index("ix_leads_ws_email", ["workspace_id", "email", "id"], unique=False)
        batch_op.create_index("ix_leads_ws_esp", ["workspace_id", "esp", "created_at", "id"], unique=False)
        batch_op.create_index("ix_leads_ws_sort_name", ["workspace_id", "sort_name", "id"], unique=False)
        batch_op.create_index(
            "ix_leads_ws_status", ["workspace_id", "status", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_leads_ws_verify", ["workspace_id", "verify_status", "created_at", "id"], unique=False
        )

    op.create_table(
        "lists",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_lists_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lists")),
        sa.UniqueConstraint("workspace_id", "name", name=op.f("uq_lists_workspace_id_name")),
    )
    op.create_table(
        "suppressions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("value", sa.String(length=320), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=True),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_suppressions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_suppressions")),
        sa.UniqueConstraint("workspace_id", "value", name=op.f("uq_suppressions_workspace_id_value")),
    )
    with op.batch_alter_table("suppressions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_suppressions_ws_created", ["workspace_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "label_timers",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("lead_id", sa.String(length=40), nullable=False),
        sa.Column("label_id", sa.String(length=40), nullable=False),
        sa.Column("action", sa.String(length=8), nullable=False),
        sa.Column("target_label_id", sa.String(length=40), nullable=True),
        sa.Column("due_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["label_id"], ["labels.id"], name=op.f("fk_label_timers_label_id_labels"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_label_timers_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["target_label_id"],
            ["labels.id"],
            name=op.f("fk_label_timers_target_label_id_labels"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_label_timers_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_label_timers")),
    )
    with op.batch_alter_table("label_timers", schema=None) as batch_op:
        batch_op.create_index("ix_label_timers_due", ["due_at"], unique=False)
        batch_op.create_index("ix_label_timers_lead_label", ["lead_id", "label_id"], unique=False)

    op.create_table(
        "lead_imports",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("file_name", sa.String(length=300), nullable=True),
        sa.Column("list_id", sa.String(length=40), nullable=True),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("verify", sa.Boolean(), nullable=False),
        sa.Column("existing", sa.String(length=6), nullable=False),
        sa.Column("rows", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created", sa.Integer(), server_default="0", nullable=False),
        sa.Column("updated", sa.Integer(), server_default="0", nullable=False),
        sa.Column("skipped", sa.Integer(), server_default="0", nullable=False),
        sa.Column("duplicates", sa.Integer(), server_default="0", nullable=False),
        sa.Column("suppressed", sa.Integer(), server_default="0", nullable=False),
        sa.Column("invalid", sa.Integer(), server_default="0", nullable=False),
        sa.Column("undeliverable", sa.Integer(), server_default="0", nullable=False),
        sa.Column("client_invalid", sa.Integer(), server_default="0", nullable=False),
        sa.Column("client_duplicates", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.Column("enriched_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["list_id"], ["lists.id"], name=op.f("fk_lead_imports_list_id_lists"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_lead_imports_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_imports")),
    )
    with op.batch_alter_table("lead_imports", schema=None) as batch_op:
        batch_op.create_index("ix_lead_imports_status", ["status"], unique=False)
        batch_op.create_index("ix_lead_imports_ws_created", ["workspace_id", "created_at"], unique=False)

    op.create_table(
        "lead_labels",
        sa.Column("lead_id", sa.String(length=40), nullable=False),
        sa.Column("label_id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("labeled_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["label_id"], ["labels.id"], name=op.f("fk_lead_labels_label_id_labels"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_labels_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_lead_labels_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("lead_id", "label_id", name=op.f("pk_lead_labels")),
    )
    with op.batch_alter_table("lead_labels", schema=None) as batch_op:
        batch_op.create_index("ix_lead_labels_label", ["label_id", "lead_id"], unique=False)

    op.create_table(
        "list_leads",
        sa.Column("list_id", sa.String(length=40), nullable=False),
        sa.Column("lead_id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("added_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_list_leads_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["list_id"], ["lists.id"], name=op.f("fk_list_leads_list_id_lists"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_list_leads_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("list_id", "lead_id", name=op.f("pk_list_leads")),
    )
    with op.batch_alter_table("list_leads", schema=None) as batch_op:
        batch_op.create_index("ix_list_leads_lead", ["lead_id"], unique=False)
        batch_op.create_index("ix_list_leads_list_added", ["list_id", "added_at", "lead_id"], unique=False)

    op.create_table(
        "import_chunks",
        sa.Column("import_id", sa.String(length=40), nullable=False),
        sa.Column("chunk_hash", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("created_at", outreach_core.kernel.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["import_id"],
            ["lead_imports.id"],
            name=op.f("fk_import_chunks_import_id_lead_imports"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_import_chunks_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("import_id", "chunk_hash", name=op.f("pk_import_chunks")),
    )
    op.create_table(
        "import_seen",
        sa.Column("import_id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(
            ["import_id"],
            ["lead_imports.id"],
            name=op.f("fk_import_seen_import_id_lead_imports"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_import_seen_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("import_id", "email", name=op.f("pk_import_seen")),
    )
    _create_search_index()


def downgrade() -> None:
    _drop_search_index()
    op.drop_table("import_seen")
    op.drop_table("import_chunks")
    with op.batch_alter_table("list_leads", schema=None) as batch_op:
        batch_op.drop_index("ix_list_leads_list_added")
        batch_op.drop_index("ix_list_leads_lead")

    op.drop_table("list_leads")
    with op.batch_alter_table("lead_labels", schema=None) as batch_op:
        batch_op.drop_index("ix_lead_labels_label")

    op.drop_table("lead_labels")
    with op.batch_alter_table("lead_imports", schema=None) as batch_op:
        batch_op.drop_index("ix_lead_imports_ws_created")
        batch_op.drop_index("ix_lead_imports_status")

    op.drop_table("lead_imports")
    with op.batch_alter_table("label_timers", schema=None) as batch_op:
        batch_op.drop_index("ix_label_timers_lead_label")
        batch_op.drop_index("ix_label_timers_due")

    op.drop_table("label_timers")
    with op.batch_alter_table("suppressions", schema=None) as batch_op:
        batch_op.drop_index("ix_suppressions_ws_created")

    op.drop_table("suppressions")
    op.drop_table("lists")
    with op.batch_alter_table("leads", schema=None) as batch_op:
        batch_op.drop_index("ix_leads_ws_verify")
        batch_op.drop_index("ix_leads_ws_status")
        batch_op.drop_index("ix_leads_ws_sort_name")
        batch_op.drop_index("ix_leads_ws_esp")
        batch_op.drop_index("ix_leads_ws_email")
        batch_op.drop_index("ix_leads_ws_domain")
        batch_op.drop_index("ix_leads_ws_created")
        batch_op.drop_index("ix_leads_ws_company")
        batch_op.drop_index("ix_leads_pending_enrichment")
        batch_op.drop_index("ix_leads_import")

    op.drop_table("leads")
    op.drop_table("labels")
    op.drop_table("domain_cache")


# Substring search over email, name and company (`leads.search_text`): a trigram FTS5 index kept in step by
# triggers on SQLite, a pg_trgm GIN index on PostgreSQL. Neither is expressible as a SQLAlchemy table, so
# both live here (and tests/test_migrations.py knows to ignore them when comparing with the metadata).
SQLITE_SEARCH = [
    "CREATE VIRTUAL TABLE leads_fts USING fts5(search_text, content='leads', content_rowid='rowid', "
    "tokenize='trigram')",
    "CREATE TRIGGER leads_fts_insert AFTER INSERT ON leads BEGIN "
    "INSERT INTO leads_fts(rowid, search_text) VALUES (new.rowid, new.search_text); END",
    "CREATE TRIGGER leads_fts_delete AFTER DELETE ON leads BEGIN "
    "INSERT INTO leads_fts(leads_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text); END",
    "CREATE TRIGGER leads_fts_update AFTER UPDATE OF search_text ON leads BEGIN "
    "INSERT INTO leads_fts(leads_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text); "
    "INSERT INTO leads_fts(rowid, search_text) VALUES (new.rowid, new.search_text); END",
]
POSTGRES_SEARCH = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX ix_leads_search_trgm ON leads USING gin (search_text gin_trgm_ops)",
]


def _create_search_index() -> None:
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_SEARCH if dialect == "sqlite" else POSTGRES_SEARCH:
        op.execute(statement)


def _drop_search_index() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("leads_fts_insert", "leads_fts_delete", "leads_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS leads_fts")
    else:
        op.execute("DROP INDEX IF EXISTS ix_leads_search_trgm")
