"""How many leads each list holds, kept exact by database triggers on `list_leads` (migration 0037), read
without counting the memberships.

Every writer of memberships (adding to a list, the import merge, removing from a list, and the triggers that
delete the memberships of deleted leads and lists) is counted by the triggers, none by itself. SQLite (one
writer at a time) updates `lists.members` in a row trigger. PostgreSQL's statement triggers append each
statement's net change per list to `list_size_deltas` instead of updating the list's row, which a merge
would hold locked until its commit against every other writer of the list; readers add the list's pending
deltas to `lists.members` in the same statement (one snapshot: exact at every moment), and the import and
enrich workers fold the deltas into `lists.members` after their batches (`fold_list_sizes`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from outreach_core.kernel.bulk import try_lock
from outreach_core.kernel.context import SystemContext, WorkspaceContext, scoped
from outreach_core.kernel.db.tables import list_size_deltas, lists
from outreach_core.targets.lead_counts import fold_lead_counters

_FOLD = """WITH moved AS (DELETE FROM list_size_deltas RETURNING list_id, n),
    summed AS (SELECT list_id, sum(n) AS n FROM moved GROUP BY list_id)
    UPDATE lists l SET members = l.members + s.n FROM summed s WHERE l.id = s.list_id AND s.n <> 0"""


def list_size(ctx: WorkspaceContext) -> Any:
    """A column expression for selects from `lists`: the list's member count (`lists.members`, plus its
    pending deltas on PostgreSQL)."""
    if ctx.conn.dialect.name != "postgresql":
        return lists.c.members
    d = list_size_deltas.c
    pending = scoped(ctx, list_size_deltas).select(func.sum(d.n)).where(d.list_id == lists.c.id)
    return lists.c.members + func.coalesce(pending.scalar_subquery(), 0)


async def size_of_list(ctx: WorkspaceContext, list_id: str) -> int:
    """How many leads the workspace's list `list_id` holds; 0 when it has no such list."""
    stmt = scoped(ctx, lists).select(list_size(ctx)).where(lists.c.id == list_id)
    return int((await ctx.conn.execute(stmt)).scalar_one_or_none() or 0)


async def fold_list_sizes(ctx: SystemContext) -> int:
    """PostgreSQL: move every pending delta into `lists.members` in one statement (a deleted list's deltas
    are dropped); returns the lists changed (0 on SQLite, which has no deltas). A fold another worker is
    running is left to it (advisory lock tried, never waited for)."""
    if ctx.conn.dialect.name != "postgresql":
        return 0
    if not await try_lock(ctx, "fold list sizes"):
        return 0
    return int((await ctx.conn.exec_driver_sql(_FOLD)).rowcount or 0)


async def fold_count_deltas(ctx: SystemContext) -> None:
    """PostgreSQL: the lead counters' and the lists' sizes' pending deltas folded, in one transaction (the
    import and enrich workers, after their batches); nothing to fold on SQLite."""
    await fold_lead_counters(ctx)
    await fold_list_sizes(ctx)
