"""PostgreSQL: `leads` and `lead_search_pending` without their foreign keys to `workspaces`; a workspace's
deletion deletes its leads by trigger

Revision ID: 0035
Revises: 0032
"""

from __future__ import annotations

from alembic import op

revision = "0035"
down_revision = "0032"
branch_labels = None
depends_on = None

# Integrity by construction (issue 31), as migration 0032 did for `list_leads`: each lead an import stores
# ran two foreign-key checks to `workspaces` (a query per row each, `leads` and `lead_search_pending`):
# 16-24 µs a row of the database's ~90 in the merge's INSERT (`bench/import_merge_pieces.py`). Instead:
# - deleting a workspace deletes its leads and search-queue rows first (a row trigger BEFORE DELETE on
#   `workspaces`; what references `leads` still cascades from them: campaign leads, sends, threads, labels,
#   list memberships by their trigger). BEFORE, not AFTER: deleting the leads appends counter deltas
#   (`lead_counter_deltas`, whose foreign key to `workspaces` is kept), which needs the workspace still
#   there; the deletion's own cascade then removes them. The trigger takes the workspace's row FOR UPDATE
#   before it reads the leads, so it waits for every transaction still writing leads for it (below) and
#   then sees their leads (READ COMMITTED: a new snapshot per statement);
# - every writer of leads holds the workspace's row `FOR KEY SHARE` once per transaction
#   (`targets.lead_owner.hold_workspace`) where the foreign key took that lock once per row, so a
#   workspace deleted before writes no lead and one deleted after waits for the commit.
# (An INSERT into `leads` also appends a counter delta per statement, whose foreign key would refuse a lead
# of a deleted workspace anyway.) SQLite keeps both foreign keys: rebuilding `leads` with its triggers and
# FTS table is not worth it there, where a foreign key check is an index probe inside the one process
# (`bench/import_merge_pieces.py`, docs/PERFORMANCE.md). `tests/leads/test_workspace_deletion.py` proves no
# lead or search-queue row outlives its workspace.
POSTGRESQL_UP = [
    """CREATE FUNCTION leads_leave_deleted_workspaces() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM 1 FROM workspaces WHERE id = OLD.id FOR UPDATE;
      DELETE FROM lead_search_pending WHERE workspace_id = OLD.id;
      DELETE FROM leads WHERE workspace_id = OLD.id;
      RETURN OLD;
    END $$""",
    "CREATE TRIGGER workspaces_leave_leads BEFORE DELETE ON workspaces "
    "FOR EACH ROW EXECUTE FUNCTION leads_leave_deleted_workspaces()",
    "ALTER TABLE leads DROP CONSTRAINT fk_leads_workspace_id_workspaces",
    "ALTER TABLE lead_search_pending DROP CONSTRAINT fk_lead_search_pending_workspace_id_workspaces",
]
POSTGRESQL_DOWN = [
    "DELETE FROM lead_search_pending p "
    "WHERE NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = p.workspace_id)",
    "DELETE FROM leads l WHERE NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = l.workspace_id)",
    "ALTER TABLE leads ADD CONSTRAINT fk_leads_workspace_id_workspaces FOREIGN KEY (workspace_id) "
    "REFERENCES workspaces (id) ON DELETE CASCADE",
    "ALTER TABLE lead_search_pending ADD CONSTRAINT fk_lead_search_pending_workspace_id_workspaces "
    "FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE",
    "DROP TRIGGER IF EXISTS workspaces_leave_leads ON workspaces",
    "DROP FUNCTION IF EXISTS leads_leave_deleted_workspaces()",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_DOWN:
            op.execute(statement)
