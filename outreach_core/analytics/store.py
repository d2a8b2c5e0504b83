"""Reading the rollups (`analytics_counters`): a period's sums per key, hourly rows for a series, all-time
rows for a breakdown. Never the send ledger."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from sqlalchemy import BigInteger, cast, func

from outreach_core.analytics.rules import pieces
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import analytics_counters
from outreach_core.kernel.db.tables.analytics import COUNTERS
from outreach_core.kernel.rollups import EPOCH

Sums = dict[str, int]
t = analytics_counters


def empty() -> Sums:
    return dict.fromkeys(COUNTERS, 0)


def _add(into: Sums, row: Any) -> None:
    for name in COUNTERS:
        into[name] += int(getattr(row, name) or 0)


async def period_sums(
    ctx: WorkspaceContext, dim: str, start: dt.datetime, end: dt.datetime, k1: str | None = None
) -> dict[tuple[str, str], Sums]:
    """Sums over [start, end) per (k1, k2) of dimension `dim` (only key `k1` when given)."""
    out: dict[tuple[str, str], Sums] = defaultdict(empty)
    for grain, lo, hi in pieces(start, end):
        stmt = (
            scoped(ctx, t)
            .select(t.c.k1, t.c.k2, *(func.sum(t.c[n]).label(n) for n in COUNTERS))
            .where(t.c.dim == dim, t.c.grain == grain, t.c.bucket >= lo, t.c.bucket < hi)
            .group_by(t.c.k1, t.c.k2)
        )
        if k1 is not None:
            stmt = stmt.where(t.c.k1 == k1)
        for row in await ctx.conn.execute(stmt):
            _add(out[(row.k1, row.k2)], row)
    return out


async def hourly(
    ctx: WorkspaceContext, dim: str, k1: str, start: dt.datetime, end: dt.datetime
) -> list[tuple[int, tuple[int, ...]]]:
    """The hourly rows of one key in [start, end): (UNIX seconds of the hour, the counters in `COUNTERS`
    order). Read as plain numbers: a 90-day series is up to 2,160 rows, and parsing each timestamp cost
    more than the rest of the request."""
    rows = await ctx.conn.execute(
        scoped(ctx, t)
        .select(_epoch(ctx), *(t.c[n] for n in COUNTERS))
        .where(t.c.dim == dim, t.c.k1 == k1, t.c.k2 == "", t.c.grain == "h")
        .where(t.c.bucket >= start, t.c.bucket < end)
    )
    return [(int(row[0]), tuple(row[1:])) for row in rows]


def _epoch(ctx: WorkspaceContext) -> Any:
    """The bucket as UNIX seconds, computed by the database."""
    if ctx.conn.dialect.name == "postgresql":
        return cast(func.extract("epoch", t.c.bucket), BigInteger)
    return cast(func.strftime("%s", t.c.bucket), BigInteger)


async def all_time(ctx: WorkspaceContext, dim: str, k1: str) -> dict[str, Sums]:
    """All-time rows of one key per k2 (a campaign's breakdown)."""
    rows = await ctx.conn.execute(
        scoped(ctx, t)
        .select(t.c.k2, *(t.c[n] for n in COUNTERS))
        .where(t.c.dim == dim, t.c.k1 == k1, t.c.grain == "t", t.c.bucket == EPOCH)
    )
    out: dict[str, Sums] = defaultdict(empty)
    for row in rows:
        _add(out[row.k2], row)
    return out


async def ever_sent(ctx: WorkspaceContext) -> bool:
    found = await ctx.conn.execute(
        scoped(ctx, t).select(t.c.dim).where(t.c.dim == "w", t.c.grain == "d", t.c.sent > 0).limit(1)
    )
    return found.first() is not None
