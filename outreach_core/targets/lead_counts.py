"""The workspace's lead counts by (status, verify_status, esp), kept exact by database triggers on `leads`
(migrations 0003 and 0013), read without scanning leads.

SQLite (one writer at a time) updates `lead_counters` in the triggers, except for the leads an import's merge
inserts (those with an `import_id`, migration 0034): the merge counts them itself, one grouped upsert per part
in the same transaction (`count_imported_leads`), where the row trigger cost an upsert per lead.

PostgreSQL's statement triggers append each statement's net change to `lead_counter_deltas` instead: every
writer used to update the same counter row (all of an import's new leads share one key), so an enrichment
batch waited for a whole merge to commit, and the row left a dead version per statement (11,809 for one
import). Readers add the pending deltas to the counters in the same statement (one snapshot: exact at every
moment), and the import and enrich workers fold the deltas into `lead_counters` after their batches
(`fold_lead_counters`), which keeps the delta table a few rows long.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, union_all

from outreach_core.kernel.bulk import try_lock
from outreach_core.kernel.context import SystemContext, WorkspaceContext, scoped
from outreach_core.kernel.db.tables import lead_counter_deltas, lead_counters, leads

KEY = "workspace_id, status, verify_status, esp"
_FOLD = f"""WITH moved AS (DELETE FROM lead_counter_deltas RETURNING {KEY}, n)
    INSERT INTO lead_counters ({KEY}, n) SELECT {KEY}, sum(n) FROM moved GROUP BY {KEY}
    ON CONFLICT ({KEY}) DO UPDATE SET n = lead_counters.n + EXCLUDED.n"""


_SQLITE_ADD = f"""INSERT INTO lead_counters ({KEY}, n) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT ({KEY}) DO UPDATE SET n = n + excluded.n"""
_STATUS = str(leads.c.status.server_default.arg)  # type: ignore[union-attr]
"""The status a lead is stored with when its row leaves it out (the column's default)."""


async def count_imported_leads(ctx: WorkspaceContext, rows: Sequence[Mapping[str, Any]]) -> None:
    """SQLite: add the leads an import's merge has just inserted in this transaction (`leads` rows as
    inserted, each with its `import_id`, `verify_status` and `esp`) to the counters, one upsert per counter
    key. The insert trigger leaves such rows to this (migration 0034). PostgreSQL: nothing, its statement
    triggers have counted them."""
    if ctx.conn.dialect.name == "postgresql" or not rows:
        return
    keys = Counter((row.get("status", _STATUS), row["verify_status"], row["esp"]) for row in rows)
    await ctx.conn.exec_driver_sql(_SQLITE_ADD, [(ctx.workspace_id, *key, n) for key, n in keys.items()])


def lead_counts(ctx: WorkspaceContext) -> Any:
    """A subquery of the workspace's counts: columns `status`, `verify_status`, `esp` and `n`, one row per
    key with leads (the folded counters plus the deltas not folded yet)."""
    # SQLite writes no deltas (and a database migrated before 0013 has no such table)
    tables = (
        (lead_counters, lead_counter_deltas) if ctx.conn.dialect.name == "postgresql" else (lead_counters,)
    )
    parts = [
        scoped(ctx, table).select(table.c.status, table.c.verify_status, table.c.esp, table.c.n)
        for table in tables
    ]
    both = union_all(*parts).subquery("counted")
    n = func.sum(both.c.n)
    return (
        both.select()
        .with_only_columns(both.c.status, both.c.verify_status, both.c.esp, n.label("n"))
        .group_by(both.c.status, both.c.verify_status, both.c.esp)
        .having(n > 0)
        .subquery("lead_counts")
    )


async def fold_lead_counters(ctx: SystemContext) -> int:
    """PostgreSQL: move every pending delta into `lead_counters` in one statement; returns the counter rows
    changed (0 on SQLite, which has no deltas). A fold another worker is running is left to it (advisory lock
    tried, never waited for)."""
    if ctx.conn.dialect.name != "postgresql":
        return 0
    if not await try_lock(ctx, "fold lead counters"):
        return 0
    return int((await ctx.conn.exec_driver_sql(_FOLD)).rowcount or 0)
