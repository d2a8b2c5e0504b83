"""What every writer of leads does first: hold the workspace the leads belong to (PostgreSQL, where `leads`
has no foreign key to `workspaces`, migration 0035)."""

from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import workspaces


async def hold_workspace(ctx: WorkspaceContext) -> bool:
    """Whether the workspace still exists, holding its row (`FOR KEY SHARE`) until the transaction ends, on
    PostgreSQL: the workspace cannot be deleted before the leads (and search-queue rows) written in this
    transaction are committed, so its deletion (the trigger of migration 0035, which waits for this lock)
    deletes them too; a workspace deleted before gets none. Every writer of `leads` calls this once per
    transaction, where the foreign key took the same lock once per row. SQLite keeps the foreign key (and
    has one writer at a time): nothing to hold, always True."""
    if ctx.conn.dialect.name != "postgresql":
        return True
    found = await ctx.conn.execute(
        scoped(ctx, workspaces).select(workspaces.c.id).with_for_update(read=True, key_share=True)
    )
    return found.first() is not None
