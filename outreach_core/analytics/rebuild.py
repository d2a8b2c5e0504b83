"""`outreach analytics rebuild [--workspace W]`: count every rollup again from the ledger, the inbox and the
leads, with the same functions the recording transactions use (`outreach_core.kernel.rollups`). For a
workspace whose counters were lost or predate the rollups; `tests/analytics/test_rebuild.py` proves the result
equals what the transactions kept."""

from __future__ import annotations

from typing import Any

from outreach_core.kernel.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    scoped,
    system_scope,
    workspace_itself,
)
from outreach_core.kernel.db.tables import (
    analytics_counters,
    analytics_replies,
    inbox_messages,
    leads,
    sends,
    workspaces,
)
from outreach_core.kernel.errors import NotFound
from outreach_core.kernel.rollups import (
    COUNTED_SENDS,
    Tally,
    add_open,
    add_send,
    add_won,
    apply,
    sync_replies,
    workspace_zone,
)
from outreach_core.kernel.wire import WireModel

PAGE = 20_000


class Rebuilt(WireModel):
    workspace_id: str
    sends: int
    replies: int
    won: int


async def rebuild(ctx: SystemContext, workspace: str | None = None) -> list[Rebuilt]:
    """Operator command: rebuild the rollups of one workspace (id or slug), or of every workspace."""
    ws = system_scope(workspaces)
    stmt = ws.select(ws.c.id).order_by(ws.c.id)
    if workspace is not None:
        stmt = stmt.where((ws.c.id == workspace) | (ws.c.slug == workspace))
    ids = [r.id for r in await ctx.conn.execute(stmt)]
    if workspace is not None and not ids:
        raise NotFound("workspace", workspace)
    return [await rebuild_workspace(as_workspace(ctx, workspace_itself(i, "analytics"))) for i in ids]


async def rebuild_workspace(ctx: WorkspaceContext) -> Rebuilt:
    """Delete the workspace's counters and count them again (one transaction)."""
    await ctx.conn.execute(scoped(ctx, analytics_counters).delete())
    await ctx.conn.execute(scoped(ctx, analytics_replies).delete())
    tally = Tally()
    n_sends = 0
    # one pass over the workspace's ledger with a server-side cursor (no sort, no repeated scans)
    found = await ctx.conn.stream(
        scoped(ctx, sends)
        .select(
            sends.c.campaign_id,
            sends.c.step,
            sends.c.variant_id,
            sends.c.mailbox_id,
            sends.c.status,
            sends.c.sent_at,
            sends.c.opened_at,
            leads.c.esp,
        )
        .select_from(sends.outerjoin(leads, leads.c.id == sends.c.lead_id))
        .where(sends.c.status.in_(COUNTED_SENDS))
    )
    async for page in found.partitions(PAGE):
        for row in page:
            add_send(tally, row)
            add_open(tally, row)
        n_sends += len(page)
    won = (
        await ctx.conn.execute(
            scoped(ctx, leads)
            .select(leads.c.won_at, leads.c.won_campaign_id)
            .where(leads.c.won_at.is_not(None))
        )
    ).all()
    for row in won:
        add_won(tally, row.won_at, row.won_campaign_id)
    await apply(ctx, tally)
    replied = await _replying_leads(ctx)
    zone = await workspace_zone(ctx)
    for start in range(0, len(replied), PAGE):
        await sync_replies(ctx, replied[start : start + PAGE], zone)
    counted = await ctx.conn.execute(scoped(ctx, analytics_replies).select(analytics_replies.c.lead_id))
    return Rebuilt(workspace_id=ctx.workspace_id, sends=n_sends, replies=len(counted.all()), won=len(won))


async def _replying_leads(ctx: WorkspaceContext) -> list[Any]:
    m = inbox_messages
    rows = await ctx.conn.execute(
        scoped(ctx, m)
        .select(sends.c.lead_id)
        .select_from(m.join(sends, sends.c.id == m.c.send_id))
        .where(m.c.direction == "in", m.c.kind == "reply")
        .distinct()
    )
    return sorted(r.lead_id for r in rows)
