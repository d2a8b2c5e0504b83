"""search terms of one or two characters use an index

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# SQLite: the trigram index holds each text followed by two END characters (U+001F), so that every place a
# 1-2 character term occurs starts a trigram, even at the end of the text. `leads_fts_vocab` lists the
# index's trigrams: a short term is matched through those that start with it (see leads/targets.py). The
# index holds more than `leads.search_index`, so it is refilled by these statements, never by 'rebuild'.
#
# One update trigger replaces migration 0005's two: SQLite fires the triggers of an event newest first, so
# its "index" trigger added the new text before its "unindex" trigger removed the old one, and the delete
# took every trigram the two texts share with it (an edited lead was no longer found by its own email).
END = "char(31, 31)"


def _search_triggers(end: str) -> list[str]:
    """The triggers keeping `leads_fts` in step with `leads.search_index`, each text followed by `end`."""
    indexed, removed = f"new.search_index{end}", f"old.search_index{end}"
    return [
        "CREATE TRIGGER leads_fts_insert AFTER INSERT ON leads WHEN new.search_index IS NOT NULL BEGIN "
        f"INSERT INTO leads_fts(rowid, search_index) VALUES (new.rowid, {indexed}); END",
        "CREATE TRIGGER leads_fts_delete AFTER DELETE ON leads WHEN old.search_index IS NOT NULL BEGIN "
        f"INSERT INTO leads_fts(leads_fts, rowid, search_index) VALUES ('delete', old.rowid, {removed}); END",
        "CREATE TRIGGER leads_fts_update AFTER UPDATE OF search_index ON leads "
        "WHEN old.search_index IS NOT new.search_index BEGIN "
        f"INSERT INTO leads_fts(leads_fts, rowid, search_index) SELECT 'delete', old.rowid, {removed} "
        "WHERE old.search_index IS NOT NULL; "
        f"INSERT INTO leads_fts(rowid, search_index) SELECT new.rowid, {indexed} "
        "WHERE new.search_index IS NOT NULL; END",
    ]


SQLITE_SEARCH = [
    *_search_triggers(f" || {END}"),
    "INSERT INTO leads_fts(leads_fts) VALUES ('delete-all')",
    f"INSERT INTO leads_fts(rowid, search_index) SELECT rowid, search_index || {END} FROM leads "
    "WHERE search_index IS NOT NULL",
    "CREATE VIRTUAL TABLE leads_fts_vocab USING fts5vocab(leads_fts, 'row')",
]
SQLITE_OLD_SEARCH = [*_search_triggers(""), "INSERT INTO leads_fts(leads_fts) VALUES ('rebuild')"]
SQLITE_TRIGGERS = (
    "leads_fts_insert",
    "leads_fts_delete",
    "leads_fts_update",
    "leads_fts_unindex",
    "leads_fts_index",
)

# PostgreSQL: a GIN index over each text's characters and pairs of adjacent characters ("fizz" -> f, i, z,
# fi, iz, zz). regexp_replace cuts the text into pairs twice, from the first and from the second character,
# so every adjacent pair is one element; U+001F separates them (a pair holding one is cut in two, which adds
# no false pair). `@>` on it is exact, so nothing is rechecked per match; COLLATE "C" compares the elements
# byte by byte, whatever the database's collation.
POSTGRESQL_SEARCH = [
    "CREATE FUNCTION lead_search_grams(t text) RETURNS text[] "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT "
    "regexp_split_to_array(t, '') "
    "|| string_to_array(regexp_replace(t, '(..)', E'\\\\1\\x1f', 'g'), E'\\x1f') "
    "|| string_to_array(regexp_replace(substr(t, 2), '(..)', E'\\\\1\\x1f', 'g'), E'\\x1f') $$",
    'CREATE INDEX ix_leads_search_short ON leads USING gin ((lead_search_grams(search_index)) COLLATE "C")',
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _drop_sqlite_triggers()
        for statement in SQLITE_SEARCH:
            op.execute(statement)
    else:
        for statement in POSTGRESQL_SEARCH:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS leads_fts_vocab")
        _drop_sqlite_triggers()
        for statement in SQLITE_OLD_SEARCH:
            op.execute(statement)
    else:
        op.execute("DROP INDEX IF EXISTS ix_leads_search_short")
        op.execute("DROP FUNCTION IF EXISTS lead_search_grams(text)")


def _drop_sqlite_triggers() -> None:
    for name in SQLITE_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
