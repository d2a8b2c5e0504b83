"""search index filled in the background; one index fewer on leads

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# `leads.search_index` is NULL until the enrich worker copies `search_text` into it; only that column is
# indexed for search (FTS5 trigram / pg_trgm), so an import pays no trigram indexing. Rows still NULL are
# found through the partial index `ix_leads_search_pending` and matched with LIKE on `search_text`.
SQLITE_SEARCH = [
    "CREATE VIRTUAL TABLE leads_fts USING fts5(search_index, content='leads', content_rowid='rowid', "
    "tokenize='trigram')",
    "CREATE TRIGGER leads_fts_insert AFTER INSERT ON leads WHEN new.search_index IS NOT NULL BEGIN "
    "INSERT INTO leads_fts(rowid, search_index) VALUES (new.rowid, new.search_index); END",
    "CREATE TRIGGER leads_fts_delete AFTER DELETE ON leads WHEN old.search_index IS NOT NULL BEGIN "
    "INSERT INTO leads_fts(leads_fts, rowid, search_index) VALUES ('delete', old.rowid, old.search_index); "
    "END",
    "CREATE TRIGGER leads_fts_unindex AFTER UPDATE OF search_index ON leads "
    "WHEN old.search_index IS NOT NULL BEGIN "
    "INSERT INTO leads_fts(leads_fts, rowid, search_index) VALUES ('delete', old.rowid, old.search_index); "
    "END",
    "CREATE TRIGGER leads_fts_index AFTER UPDATE OF search_index ON leads "
    "WHEN new.search_index IS NOT NULL BEGIN "
    "INSERT INTO leads_fts(rowid, search_index) VALUES (new.rowid, new.search_index); END",
]
SQLITE_OLD_SEARCH = [
    "CREATE VIRTUAL TABLE leads_fts USING fts5(search_text, content='leads', content_rowid='rowid', "
    "tokenize='trigram')",
    "CREATE TRIGGER leads_fts_insert AFTER INSERT ON leads BEGIN "
    "INSERT INTO leads_fts(rowid, search_text) VALUES (new.rowid, new.search_text); END",
    "CREATE TRIGGER leads_fts_delete AFTER DELETE ON leads BEGIN "
    "INSERT INTO leads_fts(leads_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text); END",
    "CREATE TRIGGER leads_fts_update AFTER UPDATE OF search_text ON leads BEGIN "
    "INSERT INTO leads_fts(leads_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text); "
    "INSERT INTO leads_fts(rowid, search_text) VALUES (new.rowid, new.search_text); END",
    "INSERT INTO leads_fts(leads_fts) VALUES ('rebuild')",
]
SQLITE_TRIGGERS = (
    "leads_fts_insert",
    "leads_fts_delete",
    "leads_fts_update",
    "leads_fts_unindex",
    "leads_fts_index",
)


def _drop_sqlite_search() -> None:
    for name in SQLITE_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS leads_fts")


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        _drop_sqlite_search()
    else:
        op.execute("DROP INDEX IF EXISTS ix_leads_search_trgm")
    with op.batch_alter_table("leads") as batch_op:
        batch_op.add_column(sa.Column("search_index", sa.Text(), nullable=True))
        batch_op.drop_index("ix_leads_ws_email")
    op.execute("UPDATE leads SET search_index = search_text")
    op.create_index(
        "ix_leads_search_pending",
        "leads",
        ["workspace_id"],
        sqlite_where=sa.text("search_index IS NULL"),
        postgresql_where=sa.text("search_index IS NULL"),
    )
    if sqlite:
        for statement in SQLITE_SEARCH:
            op.execute(statement)
        op.execute("INSERT INTO leads_fts(leads_fts) VALUES ('rebuild')")
    else:
        op.execute("CREATE INDEX ix_leads_search_trgm ON leads USING gin (search_index gin_trgm_ops)")


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        _drop_sqlite_search()
    else:
        op.execute("DROP INDEX IF EXISTS ix_leads_search_trgm")
    op.drop_index("ix_leads_search_pending", table_name="leads")
    # Plain ALTER TABLE (SQLite 3.35+): a batch "move and copy" would lose the triggers on `leads`.
    op.execute("ALTER TABLE leads DROP COLUMN search_index")
    op.create_index("ix_leads_ws_email", "leads", ["workspace_id", "email", "id"], unique=False)
    if sqlite:
        for statement in SQLITE_OLD_SEARCH:
            op.execute(statement)
    else:
        op.execute("CREATE INDEX ix_leads_search_trgm ON leads USING gin (search_text gin_trgm_ops)")
