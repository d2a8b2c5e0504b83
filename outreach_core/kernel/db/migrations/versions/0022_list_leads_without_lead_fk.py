"""list_leads: no foreign key to leads; a lead's memberships are deleted by the statement deleting the lead

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

# Integrity by construction (issue 31): the foreign key made every membership an import writes look its lead
# up (about 12 µs a row on PostgreSQL, the measurement). Leads are deleted by `delete_leads` and by
# their workspace's deletion; a trigger on `leads` removes the memberships of the deleted leads inside the
# very statement that deletes them, so no membership can outlive its lead (`tests/lists/test_no_orphans.py`).
POSTGRESQL_UP = [
    """CREATE FUNCTION list_leads_leave_deleted_leads() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM list_leads m USING gone g WHERE m.lead_id = g.id;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER leads_leave_lists AFTER DELETE ON leads REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION list_leads_leave_deleted_leads()",
    "ALTER TABLE list_leads DROP CONSTRAINT fk_list_leads_lead_id_leads",
]
POSTGRESQL_DOWN = [
    "DELETE FROM list_leads m WHERE NOT EXISTS (SELECT 1 FROM leads l WHERE l.id = m.lead_id)",
    "ALTER TABLE list_leads ADD CONSTRAINT fk_list_leads_lead_id_leads FOREIGN KEY (lead_id) "
    "REFERENCES leads (id) ON DELETE CASCADE",
    "DROP TRIGGER IF EXISTS leads_leave_lists ON leads",
    "DROP FUNCTION IF EXISTS list_leads_leave_deleted_leads()",
]
SQLITE_TRIGGER = (
    "CREATE TRIGGER leads_leave_lists AFTER DELETE ON leads BEGIN "
    "DELETE FROM list_leads WHERE lead_id = old.id; END"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_UP:
            op.execute(statement)
        return
    with op.batch_alter_table("list_leads", recreate="always") as batch_op:
        batch_op.drop_constraint("fk_list_leads_lead_id_leads", type_="foreignkey")
    op.execute(SQLITE_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL_DOWN:
            op.execute(statement)
        return
    op.execute("DROP TRIGGER IF EXISTS leads_leave_lists")
    op.execute("DELETE FROM list_leads WHERE lead_id NOT IN (SELECT id FROM leads)")
    with op.batch_alter_table("list_leads", recreate="always") as batch_op:
        batch_op.create_foreign_key(
            "fk_list_leads_lead_id_leads", "leads", ["lead_id"], ["id"], ondelete="CASCADE"
        )
