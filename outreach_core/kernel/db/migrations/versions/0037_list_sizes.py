"""lists: `members`, each list's member count kept by triggers on `list_leads` (PostgreSQL: statement
triggers append deltas to `list_size_deltas`, folded by the workers), backfilled from the memberships

Revision ID: 0037
Revises: 0034
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0037"
down_revision = "0034"
branch_labels = None
depends_on = None

# A list's `total` (`GET /leads?listId=`) and `leads` (`GET /lists`) counted its memberships: 87-114 ms on
# PostgreSQL for a million members, over DESIGN section 8's 50 ms for page 1. The count is now kept by
# triggers on `list_leads`, so every writer (add to list, the import merge, removal, and the triggers that
# delete the memberships of deleted leads and lists, migrations 0022 and 0032) keeps it without knowing.
#
# PostgreSQL: each statement appends its net change per list to `list_size_deltas` (rows, never an update of
# the list's row: an import's merge and a user adding leads to the same list never wait for each other, and
# two statements touching several lists in different orders cannot deadlock on them). Readers add a list's
# pending deltas to `lists.members` in the same statement; the import and enrich workers fold them
# (`targets.list_sizes.fold_list_sizes`). A deleted list's deltas are dropped by the fold.
#
# SQLite (one writer at a time, no statement triggers): a row trigger updates the list's row.
POSTGRESQL_UP = [
    """CREATE FUNCTION list_sizes_apply() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO list_size_deltas (list_id, workspace_id, n)
        SELECT list_id, workspace_id, count(*) FROM new_rows GROUP BY list_id, workspace_id;
      ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO list_size_deltas (list_id, workspace_id, n)
        SELECT list_id, workspace_id, -count(*) FROM old_rows GROUP BY list_id, workspace_id;
      ELSE
        INSERT INTO list_size_deltas (list_id, workspace_id, n)
        SELECT list_id, workspace_id, sum(k) FROM (
          SELECT list_id, workspace_id, -1 AS k FROM old_rows
          UNION ALL
          SELECT list_id, workspace_id, 1 AS k FROM new_rows
        ) c GROUP BY list_id, workspace_id HAVING sum(k) <> 0;
      END IF;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER list_sizes_insert AFTER INSERT ON list_leads REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION list_sizes_apply()",
    "CREATE TRIGGER list_sizes_delete AFTER DELETE ON list_leads REFERENCING OLD TABLE AS old_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION list_sizes_apply()",
    "CREATE TRIGGER list_sizes_update AFTER UPDATE ON list_leads REFERENCING OLD TABLE AS old_rows "
    "NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION list_sizes_apply()",
    "UPDATE lists l SET members = c.n "
    "FROM (SELECT list_id, count(*) AS n FROM list_leads GROUP BY list_id) c WHERE l.id = c.list_id",
]
POSTGRESQL_DOWN = [
    "DROP TRIGGER IF EXISTS list_sizes_insert ON list_leads",
    "DROP TRIGGER IF EXISTS list_sizes_delete ON list_leads",
    "DROP TRIGGER IF EXISTS list_sizes_update ON list_leads",
    "DROP FUNCTION IF EXISTS list_sizes_apply()",
]
# A rebuild of `list_leads` (batch_alter_table recreate) drops these with the table: make them again after.
SQLITE_UP = [
    "CREATE TRIGGER list_sizes_insert AFTER INSERT ON list_leads BEGIN "
    "UPDATE lists SET members = members + 1 WHERE id = new.list_id; END",
    "CREATE TRIGGER list_sizes_delete AFTER DELETE ON list_leads BEGIN "
    "UPDATE lists SET members = members - 1 WHERE id = old.list_id; END",
    "CREATE TRIGGER list_sizes_update AFTER UPDATE OF list_id ON list_leads "
    "WHEN old.list_id IS NOT new.list_id BEGIN "
    "UPDATE lists SET members = members - 1 WHERE id = old.list_id; "
    "UPDATE lists SET members = members + 1 WHERE id = new.list_id; END",
    "UPDATE lists SET members = (SELECT count(*) FROM list_leads m WHERE m.list_id = lists.id)",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS list_sizes_insert",
    "DROP TRIGGER IF EXISTS list_sizes_delete",
    "DROP TRIGGER IF EXISTS list_sizes_update",
]


def upgrade() -> None:
    op.add_column("lists", sa.Column("members", sa.BigInteger(), nullable=False, server_default="0"))
    op.create_table(
        "list_size_deltas",
        sa.Column("list_id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_list_size_deltas_list", "list_size_deltas", ["list_id"])
    for statement in POSTGRESQL_UP if op.get_bind().dialect.name == "postgresql" else SQLITE_UP:
        op.execute(statement)


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL_DOWN if postgresql else SQLITE_DOWN:
        op.execute(statement)
    op.drop_index("ix_list_size_deltas_list", table_name="list_size_deltas")
    op.drop_table("list_size_deltas")
    if postgresql:
        op.drop_column("lists", "members")
        return
    op.execute("ALTER TABLE lists DROP COLUMN members")
