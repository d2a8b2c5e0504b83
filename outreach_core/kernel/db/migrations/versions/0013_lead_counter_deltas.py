"""lead counters on PostgreSQL: statements append deltas instead of updating one hot row

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

KEY = "workspace_id, status, verify_status, esp"
CHANGED = "(o.status, o.verify_status, o.esp) IS DISTINCT FROM (w.status, w.verify_status, w.esp)"

# Every statement on `leads` appends its net change per counter key (rows, never an update of a shared
# row: a merge and an enrichment batch never wait for each other here), and an UPDATE counts only the rows
# whose key changed (the search index, verification claims and most enrichment columns change none).
APPLY_DELTAS = f"""CREATE OR REPLACE FUNCTION lead_counters_apply() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO lead_counter_deltas ({KEY}, n) SELECT {KEY}, count(*) FROM new_rows GROUP BY {KEY};
      ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO lead_counter_deltas ({KEY}, n) SELECT {KEY}, -count(*) FROM old_rows GROUP BY {KEY};
      ELSE
        INSERT INTO lead_counter_deltas ({KEY}, n)
        SELECT {KEY}, sum(k) FROM (
          SELECT o.workspace_id, o.status, o.verify_status, o.esp, -1 AS k
          FROM old_rows o JOIN new_rows w ON w.id = o.id WHERE {CHANGED}
          UNION ALL
          SELECT w.workspace_id, w.status, w.verify_status, w.esp, 1 AS k
          FROM old_rows o JOIN new_rows w ON w.id = o.id WHERE {CHANGED}
        ) c GROUP BY {KEY} HAVING sum(k) <> 0;
      END IF;
      RETURN NULL;
    END $$"""

# migration 0003's function, for the downgrade
APPLY_COUNTERS = f"""CREATE OR REPLACE FUNCTION lead_counters_apply() RETURNS trigger LANGUAGE plpgsql AS $$
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
    END $$"""

FOLD = f"""WITH moved AS (DELETE FROM lead_counter_deltas RETURNING {KEY}, n)
    INSERT INTO lead_counters ({KEY}, n) SELECT {KEY}, sum(n) FROM moved GROUP BY {KEY}
    ON CONFLICT ({KEY}) DO UPDATE SET n = lead_counters.n + EXCLUDED.n"""


def upgrade() -> None:
    op.create_table(
        "lead_counter_deltas",
        sa.Column(
            "workspace_id",
            sa.String(length=40),
            sa.ForeignKey("workspaces.id", name=op.f("fk_lead_counter_deltas_workspace_id_workspaces"),
                          ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("verify_status", sa.String(length=12), nullable=False),
        sa.Column("esp", sa.String(length=12), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
    )  # fmt: skip
    op.create_index("ix_lead_counter_deltas_workspace", "lead_counter_deltas", ["workspace_id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(APPLY_DELTAS)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(FOLD)
        op.execute(APPLY_COUNTERS)
    op.drop_index("ix_lead_counter_deltas_workspace", table_name="lead_counter_deltas")
    op.drop_table("lead_counter_deltas")
