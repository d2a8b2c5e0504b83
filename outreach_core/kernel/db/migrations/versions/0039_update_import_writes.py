"""PostgreSQL: `leads` at fillfactor 50; `import_seen` without its foreign keys, deleted with its import by
trigger

Revision ID: 0039
Revises: 0038
"""

from __future__ import annotations

from alembic import op

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

# What `existing: update` of known leads cost PostgreSQL's database per row (issue 31; 5,000-row parts,
# EXPLAIN ANALYZE and bench/import_merge_stages.py; docs/PERFORMANCE.md, "2026-11-27, 06:20-06:58"), and the
# two cuts made here:
#
# 1. `leads` fillfactor 50. The update changes columns no index of `leads` holds (a title, a phone, custom
#    fields), so each new row version could be HOT: no entry in any of the table's twelve indexes. It is
#    HOT only if it fits on the row's own page, and the merge updates a part's leads in one statement: the
#    leads the import that created them stored side by side, whole pages at a time, while the old versions
#    still count. At fillfactor 100 (full pages) most versions moved to another page, with an entry in each
#    of the twelve indexes: 80-100 µs a row against 9-11 for a HOT update. With half of each page left free
#    when it is filled, the versions of a whole page updated at once fit. The heap is twice as large from
#    the start (about 450 bytes a lead more; its indexes, unchanged, stay larger than the heap): the size a
#    table at fillfactor 100 reaches anyway after one such update, whose moved versions are appended at its
#    end. `ALTER TABLE ... SET (fillfactor)` rewrites nothing and blocks no reader or writer of rows: the
#    pages of an existing table keep their fill; new pages, and space vacuum frees in old ones, are filled
#    to half only.
# 2. `import_seen` without foreign keys. The merge COPYs a row per address it met without creating it
#    (every row of an update import); its two foreign-key checks (`lead_imports`, `workspaces`) cost 28-30
#    µs a row of the COPY's 37-39. The rows are deleted when their import is done (`imports.merge`); an
#    import is only ever deleted with its workspace, whose deletion (migration 0035's trigger) waits for
#    every merge holding the workspace (`targets.lead_owner.hold_workspace`, taken before any row is
#    written), and a merge that starts after it finds no workspace and writes nothing. The deletion of an
#    import deletes its rows by a statement trigger (one DELETE per statement, not per import; what the
#    cascade did). SQLite keeps both foreign keys (a check is an index probe in the process there) and has
#    no fillfactor (it updates a row in place).
POSTGRESQL_UP = [
    "ALTER TABLE leads SET (fillfactor = 50)",
    """CREATE FUNCTION import_seen_leave_deleted_imports() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM import_seen s USING gone g WHERE s.import_id = g.id;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER lead_imports_leave_seen AFTER DELETE ON lead_imports REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION import_seen_leave_deleted_imports()",
    "ALTER TABLE import_seen DROP CONSTRAINT fk_import_seen_import_id_lead_imports",
    "ALTER TABLE import_seen DROP CONSTRAINT fk_import_seen_workspace_id_workspaces",
]
POSTGRESQL_DOWN = [
    "DELETE FROM import_seen s WHERE NOT EXISTS (SELECT 1 FROM lead_imports i WHERE i.id = s.import_id) "
    "OR NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = s.workspace_id)",
    "ALTER TABLE import_seen ADD CONSTRAINT fk_import_seen_import_id_lead_imports FOREIGN KEY (import_id) "
    "REFERENCES lead_imports (id) ON DELETE CASCADE",
    "ALTER TABLE import_seen ADD CONSTRAINT fk_import_seen_workspace_id_workspaces "
    "FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE",
    "DROP TRIGGER IF EXISTS lead_imports_leave_seen ON lead_imports",
    "DROP FUNCTION IF EXISTS import_seen_leave_deleted_imports()",
    "ALTER TABLE leads RESET (fillfactor)",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_DOWN:
            op.execute(statement)
