"""PostgreSQL: the two GIN search indexes move from `leads` to a side table filled after storing

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# An import's COPY into `leads` maintained both GIN indexes row by row (pg_trgm over `search_index`: 61 µs a
# row; the short terms' grams: more), the larger part of what storing cost the database (issue 31). They
# now index `lead_search.text`, which the search-index worker fills from `leads.search_index` once an
# import's parts are stored; until then a stored lead is listed in `lead_search_pending` and found by
# testing its `search_text`. `leads.search_index` itself stays, written with the lead: the sort indexes
# carry it (migration 0009), and search pages walk them.
POSTGRESQL_UP = [
    "CREATE INDEX ix_lead_search_trgm ON lead_search USING gin (text gin_trgm_ops)",
    'CREATE INDEX ix_lead_search_short ON lead_search USING gin ((lead_search_grams(text)) COLLATE "C")',
    "INSERT INTO lead_search (lead_id, workspace_id, text) "
    "SELECT id, workspace_id, search_index FROM leads WHERE search_index IS NOT NULL",
    "DROP INDEX IF EXISTS ix_leads_search_trgm",
    "DROP INDEX IF EXISTS ix_leads_search_short",
    # `text` follows `search_index` whatever changes it (a renamed lead, `existing: update`, the worker
    # indexing a lead that had none)
    """CREATE FUNCTION lead_search_follow() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.search_index IS NULL THEN
        DELETE FROM lead_search WHERE lead_id = NEW.id;
      ELSE
        INSERT INTO lead_search (lead_id, workspace_id, text)
        VALUES (NEW.id, NEW.workspace_id, NEW.search_index)
        ON CONFLICT (lead_id) DO UPDATE SET text = EXCLUDED.text;
      END IF;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER lead_search_follow AFTER UPDATE OF search_index ON leads FOR EACH ROW "
    "WHEN (OLD.search_index IS DISTINCT FROM NEW.search_index) EXECUTE FUNCTION lead_search_follow()",
]
POSTGRESQL_DOWN = [
    "DROP TRIGGER IF EXISTS lead_search_follow ON leads",
    "DROP FUNCTION IF EXISTS lead_search_follow()",
    "CREATE INDEX ix_leads_search_trgm ON leads USING gin (search_index gin_trgm_ops)",
    'CREATE INDEX ix_leads_search_short ON leads USING gin ((lead_search_grams(search_index)) COLLATE "C")',
]


def upgrade() -> None:
    op.create_table(
        "lead_search",
        sa.Column("lead_id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["lead_id"], ["leads.id"], name=op.f("fk_lead_search_lead_id_leads"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"],
                                name=op.f("fk_lead_search_workspace_id_workspaces"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("lead_id", name=op.f("pk_lead_search")),
    )  # fmt: skip
    op.create_table(
        "lead_search_pending",
        sa.Column("lead_id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE",
                                name=op.f("fk_lead_search_pending_workspace_id_workspaces")),
        sa.PrimaryKeyConstraint("lead_id", name=op.f("pk_lead_search_pending")),
    )  # fmt: skip
    op.create_index("ix_lead_search_pending_ws", "lead_search_pending", ["workspace_id"])
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_DOWN:
            op.execute(statement)
    op.drop_index("ix_lead_search_pending_ws", table_name="lead_search_pending")
    op.drop_table("lead_search_pending")
    op.drop_table("lead_search")
