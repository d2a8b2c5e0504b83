"""the sort indexes of leads carry the search text

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# A search matching many leads pages by walking a sort index and testing each lead's text. With
# `search_index` in the index the walk reads no table rows: a page of "hooli" sorted by company descending,
# whose first match is the 69,624th lead of that order, took 270-315 ms reading the rows and 31-35 ms from
# the index alone (a million leads). PostgreSQL carries it in the unique (workspace_id, email) constraint as
# an INCLUDE column; SQLite, which has no INCLUDE, gets a second index for that order.
#
# A B-tree entry on PostgreSQL holds at most 2,704 bytes, so a text over 900 bytes is taken out of
# `search_index` (see leads/rules.py, SEARCH_INDEX_MAX_BYTES) and found by testing rows, like a lead not
# indexed yet.
MAX_BYTES = 900
SORT_INDEXES = {
    "ix_leads_ws_created": "workspace_id, created_at, id",
    "ix_leads_ws_sort_name": "workspace_id, sort_name, id",
    "ix_leads_ws_company": "workspace_id, company, id",
}
UNIQUE_EMAIL = "uq_leads_workspace_id_email"
SQLITE_EMAIL_INDEX = "ix_leads_ws_email_search"


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    length = "length(CAST(search_index AS BLOB))" if sqlite else "octet_length(search_index)"
    op.execute(f"UPDATE leads SET search_index = NULL WHERE {length} > {MAX_BYTES}")
    _sort_indexes(", search_index")
    if sqlite:
        op.execute(f"CREATE INDEX {SQLITE_EMAIL_INDEX} ON leads (workspace_id, email, search_index)")
    else:
        _unique_email(" INCLUDE (search_index)")
    _analyze(sqlite)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    _sort_indexes("")
    if sqlite:
        op.execute(f"DROP INDEX IF EXISTS {SQLITE_EMAIL_INDEX}")
    else:
        _unique_email("")
    _analyze(sqlite)


def _sort_indexes(carried: str) -> None:
    for name, columns in SORT_INDEXES.items():
        op.execute(f"DROP INDEX IF EXISTS {name}")
        op.execute(f"CREATE INDEX {name} ON leads ({columns}{carried})")


def _unique_email(include: str) -> None:
    op.execute(
        f"ALTER TABLE leads DROP CONSTRAINT {UNIQUE_EMAIL}, "
        f"ADD CONSTRAINT {UNIQUE_EMAIL} UNIQUE (workspace_id, email){include}"
    )


def _analyze(sqlite: bool) -> None:
    # Without statistics for the new indexes SQLite's planner guessed badly (at a million leads a search
    # page took 0.7 s instead of 30-50 ms until the next import refreshed them); as db/maintenance.py does.
    if sqlite:
        op.execute("PRAGMA analysis_limit=2000")
    op.execute("ANALYZE leads")
