"""list_leads: `lead_created_at` (the lead's `created_at`, copied) and `ix_list_leads_order` (list_id,
lead_created_at, lead_id, workspace_id) in place of `ix_list_leads_members` (list_id, lead_id, workspace_id)

Revision ID: 0033
Revises: 0036
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import outreach_core.kernel.db.types

revision = "0033"
down_revision = "0036"
branch_labels = None
depends_on = None

# A list's page sorted by createdAt (the default) read its members in the workspace's sort order by walking
# the newest leads; a list of the workspace's oldest leads (an `existing: update` import) fell back to
# sorting every member: 875 ms for 200,000 members on SQLite. With the lead's `created_at` on the
# membership (it never changes) the page's keys come in order from one index, which also answers the list's
# workspace-scoped count as the index it replaces did: the B-trees written per membership stay three.
BACKFILL = {
    "postgresql": (
        "UPDATE list_leads m SET lead_created_at = l.created_at FROM leads l WHERE l.id = m.lead_id"
    ),
    "sqlite": (
        "UPDATE list_leads SET lead_created_at = "
        "(SELECT l.created_at FROM leads l WHERE l.id = list_leads.lead_id)"
    ),
}
# memberships of leads gone (none, by the triggers of migrations 0022 and 0032; a guard for NOT NULL)
ORPHANS = "DELETE FROM list_leads WHERE lead_created_at IS NULL"
# the triggers that name `list_leads`, which SQLite's table rebuild (drop, then rename the copy) cannot do
# while they exist (migration 0032): dropped before and made again after
SQLITE_TRIGGERS = {
    "leads_leave_lists": (
        "CREATE TRIGGER leads_leave_lists AFTER DELETE ON leads BEGIN "
        "DELETE FROM list_leads WHERE lead_id = old.id; END"
    ),
    "lists_leave_members": (
        "CREATE TRIGGER lists_leave_members AFTER DELETE ON lists BEGIN "
        "DELETE FROM list_leads WHERE list_id = old.id; END"
    ),
}
ORDER = ["list_id", "lead_created_at", "lead_id", "workspace_id"]
MEMBERS = ["list_id", "lead_id", "workspace_id"]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.add_column(
        "list_leads", sa.Column("lead_created_at", outreach_core.kernel.db.types.UtcDateTime(), nullable=True)
    )
    op.execute(BACKFILL[dialect])
    op.execute(ORPHANS)
    op.drop_index("ix_list_leads_members", table_name="list_leads")
    if dialect == "postgresql":
        op.alter_column("list_leads", "lead_created_at", nullable=False)
    else:
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER {name}")
        with op.batch_alter_table("list_leads", recreate="always") as batch_op:
            batch_op.alter_column(
                "lead_created_at", existing_type=outreach_core.kernel.db.types.UtcDateTime(), nullable=False
            )
        for statement in SQLITE_TRIGGERS.values():
            op.execute(statement)
    op.create_index("ix_list_leads_order", "list_leads", ORDER)


def downgrade() -> None:
    op.create_index("ix_list_leads_members", "list_leads", MEMBERS)
    op.drop_index("ix_list_leads_order", table_name="list_leads")
    if op.get_bind().dialect.name == "postgresql":
        op.drop_column("list_leads", "lead_created_at")
        return
    op.execute("ALTER TABLE list_leads DROP COLUMN lead_created_at")
