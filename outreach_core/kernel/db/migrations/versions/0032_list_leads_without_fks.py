"""list_leads: no foreign keys at all; a list's memberships are deleted by the statement deleting the list

Revision ID: 0032
Revises: 0031
"""

from __future__ import annotations

from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

# Integrity by construction (issue 31, decision 3), as migration 0022 did for the foreign key to `leads`:
# on PostgreSQL each membership an import writes ran two foreign-key checks (a query per row each, to
# `lists` and to `workspaces`): 18 µs a row of the database's ~100 in the merge of a part
# (`bench/import_merge_pieces.py`). Instead:
# - the statement deleting lists deletes their memberships (a trigger on `lists`; a workspace's deletion
#   deletes its lists by their own foreign key, which fires it);
# - every writer of memberships takes the list's row with `FOR KEY SHARE` once per statement (what the
#   foreign key's check took once per row), so a list cannot be deleted between that and the commit, and
#   a list deleted before writes no membership (`list_members.lock_list`).
# `tests/lists/test_no_orphans.py` proves no membership outlives its list.
POSTGRESQL_UP = [
    """CREATE FUNCTION list_leads_leave_deleted_lists() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM list_leads m USING gone g WHERE m.list_id = g.id;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER lists_leave_members AFTER DELETE ON lists REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION list_leads_leave_deleted_lists()",
    "ALTER TABLE list_leads DROP CONSTRAINT fk_list_leads_list_id_lists",
    "ALTER TABLE list_leads DROP CONSTRAINT fk_list_leads_workspace_id_workspaces",
]
POSTGRESQL_DOWN = [
    "DELETE FROM list_leads m WHERE NOT EXISTS (SELECT 1 FROM lists l WHERE l.id = m.list_id)",
    "ALTER TABLE list_leads ADD CONSTRAINT fk_list_leads_list_id_lists FOREIGN KEY (list_id) "
    "REFERENCES lists (id) ON DELETE CASCADE",
    "ALTER TABLE list_leads ADD CONSTRAINT fk_list_leads_workspace_id_workspaces FOREIGN KEY (workspace_id) "
    "REFERENCES workspaces (id) ON DELETE CASCADE",
    "DROP TRIGGER IF EXISTS lists_leave_members ON lists",
    "DROP FUNCTION IF EXISTS list_leads_leave_deleted_lists()",
]
SQLITE_TRIGGER = (
    "CREATE TRIGGER lists_leave_members AFTER DELETE ON lists BEGIN "
    "DELETE FROM list_leads WHERE list_id = old.id; END"
)
# migration 0022's trigger names `list_leads`, which SQLite's table rebuild (drop, then rename the copy)
# cannot do while it exists: dropped before and made again after
SQLITE_LEADS_TRIGGER = (
    "CREATE TRIGGER leads_leave_lists AFTER DELETE ON leads BEGIN "
    "DELETE FROM list_leads WHERE lead_id = old.id; END"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_UP:
            op.execute(statement)
        return
    op.execute("DROP TRIGGER leads_leave_lists")
    with op.batch_alter_table("list_leads", recreate="always") as batch_op:
        batch_op.drop_constraint("fk_list_leads_list_id_lists", type_="foreignkey")
        batch_op.drop_constraint("fk_list_leads_workspace_id_workspaces", type_="foreignkey")
    op.execute(SQLITE_LEADS_TRIGGER)
    op.execute(SQLITE_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_DOWN:
            op.execute(statement)
        return
    op.execute("DROP TRIGGER IF EXISTS lists_leave_members")
    op.execute("DROP TRIGGER leads_leave_lists")
    op.execute("DELETE FROM list_leads WHERE list_id NOT IN (SELECT id FROM lists)")
    with op.batch_alter_table("list_leads", recreate="always") as batch_op:
        batch_op.create_foreign_key(
            "fk_list_leads_list_id_lists", "lists", ["list_id"], ["id"], ondelete="CASCADE"
        )
        batch_op.create_foreign_key(
            "fk_list_leads_workspace_id_workspaces",
            "workspaces",
            ["workspace_id"],
            ["id"],
            ondelete="CASCADE",
        )
    op.execute(SQLITE_LEADS_TRIGGER)
