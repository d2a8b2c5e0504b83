"""`outreach analytics rebuild [--workspace W]`: count every rollup again from the ledger, the inbox and the
leads, with the same functions the recording transactions use (`outreach_core.kernel.rollups`). For a
workspace whose counters were lost or predate the rollups; `tests/analytics/test_rebuild.py` proves the result
equals what the transactions kept."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

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
    WEEK_BUCKET,
    Tally,
    add_won,
    apply_staged,
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
    n_sends = await _count_ledger(ctx)
    tally = Tally()
    won = (
        await ctx.conn.execute(
            scoped(ctx, leads)
            .select(leads.c.won_at, leads.c.won_campaign_id)
            .where(leads.c.won_at.is_not(None))
        )
    ).all()
    for row in won:
        add_won(tally, row.won_at, row.won_campaign_id)
    replied = await _replying_leads(ctx)
    zone = await workspace_zone(ctx)
    for start in range(0, len(replied), PAGE):
        await sync_replies(ctx, replied[start : start + PAGE], zone, into=tally)
    await apply_staged(ctx, tally)
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


# What `add_send` and a first open (`count_opens`) count for every ledger row, computed by the database in
# one pass (the rebuild counted 10 M sends row by row in Python at ~50 µs CPU each; set-based it is a few
# hash aggregations). The buckets are spelled as the counters' UtcDateTime column stores them:
# `timestamptz` on PostgreSQL, naive UTC text `YYYY-MM-DD HH:MM:SS.ffffff` on SQLite.
# tests/analytics/test_rebuild.py proves the result equal to what the recording transactions keep.
_BUCKETS = {
    "postgresql": (
        "date_trunc('hour', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
        "date_trunc('day', hr AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
        WEEK_BUCKET["postgresql"].format(bucket="hr"),
        "TIMESTAMPTZ '1970-01-01 00:00:00+00'",
    ),
    "sqlite": (
        "substr(at, 1, 13) || ':00:00.000000'",
        "substr(hr, 1, 10) || ' 00:00:00.000000'",
        WEEK_BUCKET["sqlite"].format(bucket="hr"),
        "'1970-01-01 00:00:00.000000'",
    ),
}
_KEYS = {
    "w": ("''", "''"),
    "c": ("campaign_id", "''"),
    "m": ("mailbox", "''"),
    "e": ("esp", "''"),
    "v": ("campaign_id", "CAST(step AS VARCHAR) || ':' || variant"),
    "cm": ("campaign_id", "mailbox"),
    "ce": ("campaign_id", "esp"),
}
_TEMP = "analytics_rebuild_hours"


async def _count_ledger(ctx: WorkspaceContext) -> int:
    """Insert the counters of the workspace's ledger (sent, bounced at `sent_at`; opened at `opened_at`)
    into its emptied `analytics_counters`; return the number of ledger rows counted."""
    pg = ctx.conn.dialect.name == "postgresql"
    hour, day, week, epoch = _BUCKETS["postgresql" if pg else "sqlite"]
    if pg:  # the hash aggregations of millions of rows in memory rather than in batches on disk
        await ctx.conn.execute(text("SET LOCAL work_mem = '256MB'"))
    statuses = ", ".join(f"'{s}'" for s in COUNTED_SENDS)
    # 1. the ledger grouped by every key a counter needs and the UTC hour
    await ctx.conn.execute(text(f"DROP TABLE IF EXISTS {_TEMP}"))
    await ctx.conn.execute(
        text(
            f"""CREATE TEMPORARY TABLE {_TEMP} AS
            SELECT campaign_id, step, variant, mailbox, esp, {hour} AS hr,
                   sum(sent) AS sent, sum(bounced) AS bounced, sum(opened) AS opened
            FROM (
                SELECT s.campaign_id, s.step, COALESCE(NULLIF(s.variant_id, ''), '-') AS variant,
                       COALESCE(NULLIF(s.mailbox_id, ''), '-') AS mailbox,
                       COALESCE(NULLIF(l.esp, ''), 'unknown') AS esp,
                       s.sent_at AS at, 1 AS sent,
                       CASE WHEN s.status = 'bounced' THEN 1 ELSE 0 END AS bounced, 0 AS opened
                FROM sends s LEFT JOIN leads l ON l.id = s.lead_id
                WHERE s.workspace_id = :ws AND s.status IN ({statuses}) AND s.sent_at IS NOT NULL
                UNION ALL
                SELECT s.campaign_id, s.step, COALESCE(NULLIF(s.variant_id, ''), '-'),
                       COALESCE(NULLIF(s.mailbox_id, ''), '-'), COALESCE(NULLIF(l.esp, ''), 'unknown'),
                       s.opened_at, 0, 0, 1
                FROM sends s LEFT JOIN leads l ON l.id = s.lead_id
                WHERE s.workspace_id = :ws AND s.status IN ({statuses}) AND s.opened_at IS NOT NULL
            ) ev
            GROUP BY campaign_id, step, variant, mailbox, esp, {hour}"""
        ),
        {"ws": ctx.workspace_id},
    )
    # 2. every dimension from those hours: hourly, daily and weekly, or all-time
    columns = "workspace_id, dim, k1, k2, grain, bucket, sent, bounced, opened"
    for dim, (k1, k2) in _KEYS.items():
        grains = [("t", epoch)] if dim in ("v", "cm", "ce") else [("h", "hr"), ("d", day), ("k", week)]
        for grain, bucket in grains:
            # PostgreSQL refuses a constant in GROUP BY
            groups = [e for e in (k1, k2, bucket) if not e.startswith("'") and e != epoch]
            await ctx.conn.execute(
                text(
                    f"""INSERT INTO analytics_counters ({columns})
                    SELECT :ws, '{dim}', {k1}, {k2}, '{grain}', {bucket},
                           sum(sent), sum(bounced), sum(opened)
                    FROM {_TEMP} GROUP BY {", ".join(groups)}"""
                ),
                {"ws": ctx.workspace_id},
            )
    counted = await ctx.conn.execute(
        text(f"""SELECT count(*) FROM sends WHERE workspace_id = :ws AND status IN ({statuses})"""),
        {"ws": ctx.workspace_id},
    )
    await ctx.conn.execute(text(f"DROP TABLE {_TEMP}"))
    return int(counted.scalar_one())
