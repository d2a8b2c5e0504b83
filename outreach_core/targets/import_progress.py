"""An import's last steps, after its rows are merged: `enriching` until every lead it created is enriched
(and, when it asked for it, verified), then `done`. Enrichment and verification move it forward, each after
its own batch; the imports domain moves it from `importing` to `enriching`."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import not_, or_

from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.maintenance import refresh_lead_statistics
from outreach_core.kernel.db.side_queue import pending_parts, side_queue_of
from outreach_core.kernel.db.tables import import_queue, lead_imports, leads

STORING_WINDOW = timedelta(seconds=60)
"""An import counts as being stored while it has parts queued that arrived, or it had a part merged, within
this long: a part that cannot be merged (a bug) stops holding the others' work back after a minute."""


async def import_parts_queued(ctx: SystemContext) -> bool:
    """Whether an import is being stored (any workspace): parts queued that arrived, or whose import had a
    part merged, within `STORING_WINDOW`. Storing comes first (issue 31): meanwhile enrichment,
    verification and the search index write no leads, so that they hold the write lock the merge needs
    (SQLite's one lock; on PostgreSQL the cores and the index pages) at most for enrichment's short
    `domain_cache` upsert, and start on the stored leads once the queue is empty. A short read."""
    since = ctx.now - STORING_WINDOW
    if ctx.conn.dialect.name == "sqlite" and await _side_parts_queued(ctx, since):
        return True
    queued = (
        system_scope(import_queue)
        .select(import_queue.c.import_id)
        .join(lead_imports, lead_imports.c.id == import_queue.c.import_id)
        .where(or_(import_queue.c.created_at >= since, lead_imports.c.merged_at >= since))
        .limit(1)
    )
    return (await ctx.conn.execute(queued)).first() is not None


async def _side_parts_queued(ctx: SystemContext, since: datetime) -> bool:
    """SQLite: the same question of the parts in the side file (`kernel/db/side_queue.py`)."""
    async with side_queue_of(ctx.conn).reading() as side:
        parts = await pending_parts(side)
    if any(p.created_at >= since for p in parts):
        return True
    if not parts:
        return False
    merged = (
        system_scope(lead_imports)
        .select(lead_imports.c.id)
        .where(lead_imports.c.id.in_(sorted({p.import_id for p in parts})), lead_imports.c.merged_at >= since)
        .limit(1)
    )
    return (await ctx.conn.execute(merged)).first() is not None


async def finish_imports(ctx: SystemContext, *, workspace_id: str | None = None) -> int:
    """Move imports in `enriching` forward; returns how many became `done`.

    - When none of an import's leads waits for enrichment any more, its `enriched_at` is set.
    - An enriched import becomes `done` (`finished_at` = now) when it was not asked to verify, or when none of
      its leads is still `verifying`. Enrichment and verification both call this, after each batch.
    Only imports whose final chunk has arrived are `enriching`; earlier states are left alone."""
    imports = system_scope(lead_imports)
    lead_rows = system_scope(leads)
    same_import = (
        leads.c.workspace_id == lead_imports.c.workspace_id,
        leads.c.import_id == lead_imports.c.id,
    )
    waiting = lead_rows.select(leads.c.id).where(leads.c.enriched_at.is_(None), *same_import).exists()
    verifying = (
        lead_rows.select(leads.c.id).where(leads.c.verify_status == "verifying", *same_import).exists()
    )
    scope = [lead_imports.c.status == "enriching"]
    if workspace_id is not None:
        scope.append(lead_imports.c.workspace_id == workspace_id)
    await ctx.conn.execute(
        imports.update()
        .where(*scope, lead_imports.c.enriched_at.is_(None), not_(waiting))
        .values(enriched_at=ctx.now)
    )
    done = await ctx.conn.execute(
        imports.update()
        .where(
            *scope,
            lead_imports.c.enriched_at.is_not(None),
            or_(not_(lead_imports.c.verify), not_(verifying)),
        )
        .values(status="done", finished_at=ctx.now)
    )
    finished = int(done.rowcount or 0)
    if finished:
        await refresh_lead_statistics(ctx.conn)
    return finished
