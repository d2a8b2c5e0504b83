"""lead counters kept by triggers

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

KEY = "workspace_id, status, verify_status, esp"

SQLITE = [
    f"""CREATE TRIGGER lead_counters_insert AFTER INSERT ON leads BEGIN
        INSERT INTO lead_counters ({KEY}, n)
        VALUES (new.workspace_id, new.status, new.verify_status, new.esp, 1)
        ON CONFLICT ({KEY}) DO UPDATE SET n = n + 1; END""",
    """CREATE TRIGGER lead_counters_delete AFTER DELETE ON leads BEGIN
        UPDATE lead_counters SET n = n - 1 WHERE workspace_id = old.workspace_id AND status = old.status
        AND verify_status = old.verify_status AND esp = old.esp; END""",
    f"""CREATE TRIGGER lead_counters_update AFTER UPDATE OF status, verify_status, esp ON leads
        WHEN old.status IS NOT new.status OR old.verify_status IS NOT new.verify_status
          OR old.esp IS NOT new.esp
        BEGIN
        UPDATE lead_counters SET n = n - 1 WHERE workspace_id = old.workspace_id AND status = old.status
        AND verify_status = old.verify_status AND esp = old.esp;
        INSERT INTO lead_counters ({KEY}, n)
        VALUES (new.workspace_id, new.status, new.verify_status, new.esp, 1)
        ON CONFLICT ({KEY}) DO UPDATE SET n = n + 1; END""",
]

# PostgreSQL: statement-level triggers over transition tables, one grouped upsert per statement.
POSTGRES = [
    f"""CREATE FUNCTION lead_counters_apply() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE lead_counters c SET n = c.n - d.k
        FROM (SELECT {KEY}, count(*) AS k FROM old_rows GROUP BY {KEY}) d
        WHERE c.workspace_id = d.workspace_id AND c.status = d.status
          AND c.verify_status = d.verify_status AND c.esp = d.esp;
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO lead_counters ({KEY}, n)
        SELECT {KEY}, count(*) FROM new_rows GROUP BY {KEY}
        ON CONFLICT ({KEY}) DO UPDATE SET n = lead_counters.n + EXCLUDED.n;
      END IF;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER lead_counters_insert AFTER INSERT ON leads REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION lead_counters_apply()",
    "CREATE TRIGGER lead_counters_delete AFTER DELETE ON leads REFERENCING OLD TABLE AS old_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION lead_counters_apply()",
    "CREATE TRIGGER lead_counters_update AFTER UPDATE ON leads REFERENCING OLD TABLE AS old_rows "
    "NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_counters_apply()",
]


def upgrade() -> None:
    op.create_table(
        "lead_counters",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("verify_status", sa.String(length=12), nullable=False),
        sa.Column("esp", sa.String(length=12), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_lead_counters_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "workspace_id", "status", "verify_status", "esp", name=op.f("pk_lead_counters")
        ),
    )
    op.execute(f"INSERT INTO lead_counters ({KEY}, n) SELECT {KEY}, count(*) FROM leads GROUP BY {KEY}")
    for statement in SQLITE if op.get_bind().dialect.name == "sqlite" else POSTGRES:
        op.execute(statement)


def downgrade() -> None:
    for name in ("lead_counters_insert", "lead_counters_delete", "lead_counters_update"):
        op.execute(
            f"DROP TRIGGER IF EXISTS {name}" + ("" if op.get_bind().dialect.name == "sqlite" else " ON leads")
        )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS lead_counters_apply()")
    op.drop_table("lead_counters")
