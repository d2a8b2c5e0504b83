"""Reading the rollups (`analytics_counters`): a period's sums per key, a key's local calendar days for a
series, all-time rows for a breakdown; each as one statement whose grouping the database does. Never the
send ledger."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import BigInteger, String, case, cast, func, literal, select, union_all

from outreach_core.analytics.rules import local_day, offsets, pieces
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


async def days(
    ctx: WorkspaceContext, dim: str, k1: str, start: dt.datetime, end: dt.datetime, zone: ZoneInfo
) -> dict[dt.date, tuple[int, ...]]:
    """The counters of one key (in `COUNTERS` order) per calendar day of `zone` in [start, end), summed by
    the database from the hourly rows: each hour counts on the local date its first instant falls on
    (`rules.offsets`). One statement returning a row a day; the hours (up to 2,160 for 90 days) never
    leave the database."""
    pieces = offsets(start, end, zone)
    shift: Any = literal(pieces[0][1], BigInteger)
    if len(pieces) > 1:
        shift = case(
            *((t.c.bucket >= since, literal(off, BigInteger)) for since, off in reversed(pieces[1:])),
            else_=literal(pieces[0][1], BigInteger),
        )
    day = ((_epoch(ctx) + shift) // literal(86400, BigInteger)).label("day")
    rows = await ctx.conn.execute(
        scoped(ctx, t)
        .select(day, *(func.sum(t.c[n]) for n in COUNTERS))
        .where(t.c.dim == dim, t.c.k1 == k1, t.c.k2 == "", t.c.grain == "h")
        .where(t.c.bucket >= start, t.c.bucket < end)
        .group_by(day)
    )
    return {local_day(int(row[0])): tuple(int(n or 0) for n in row[1:]) for row in rows}


async def sums(
    ctx: WorkspaceContext, asks: Sequence[tuple[str, Sequence[str], dt.datetime, dt.datetime]]
) -> dict[str, dict[tuple[str, str, str], Sums]]:
    """Sums over [start, end) per (dim, k1, k2) of the given dimensions, for several (tag, dimensions,
    start, end) in one statement: the rollup reads of each (the edge hours and the whole UTC days,
    `rules.pieces`) as branches of one `UNION ALL`, summed by the database. Answers tag -> (dim, k1, k2)
    -> sums."""
    branches = []
    for tag, dims, start, end in asks:
        for grain, lo, hi in pieces(start, end):
            branches.append(
                scoped(ctx, t)
                .select(
                    literal(tag, String).label("tag"), t.c.dim, t.c.k1, t.c.k2, *(t.c[n] for n in COUNTERS)
                )
                .where(t.c.dim.in_(list(dims)), t.c.grain == grain, t.c.bucket >= lo, t.c.bucket < hi)
            )
    out: dict[str, dict[tuple[str, str, str], Sums]] = {tag: defaultdict(empty) for tag, *_ in asks}
    if not branches:
        return out
    rows = union_all(*branches).subquery()
    stmt = select(
        rows.c.tag, rows.c.dim, rows.c.k1, rows.c.k2, *(func.sum(rows.c[n]).label(n) for n in COUNTERS)
    ).group_by(rows.c.tag, rows.c.dim, rows.c.k1, rows.c.k2)
    for row in await ctx.conn.execute(stmt):
        _add(out[row.tag][(row.dim, row.k1, row.k2)], row)
    return out


def _epoch(ctx: WorkspaceContext) -> Any:
    """The bucket as UNIX seconds, computed by the database."""
    if ctx.conn.dialect.name == "postgresql":
        return cast(func.extract("epoch", t.c.bucket), BigInteger)
    return cast(func.strftime("%s", t.c.bucket), BigInteger)


async def all_time(ctx: WorkspaceContext, dims: Sequence[str], k1: str) -> dict[str, dict[str, Sums]]:
    """All-time rows of one key per dimension and k2 (a campaign's breakdown), in one statement."""
    rows = await ctx.conn.execute(
        scoped(ctx, t)
        .select(t.c.dim, t.c.k2, *(t.c[n] for n in COUNTERS))
        .where(t.c.dim.in_(list(dims)), t.c.k1 == k1, t.c.grain == "t", t.c.bucket == EPOCH)
    )
    out: dict[str, dict[str, Sums]] = {dim: defaultdict(empty) for dim in dims}
    for row in rows:
        _add(out[row.dim][row.k2], row)
    return out


async def ever_sent(ctx: WorkspaceContext) -> bool:
    found = await ctx.conn.execute(
        scoped(ctx, t).select(t.c.dim).where(t.c.dim == "w", t.c.grain == "d", t.c.sent > 0).limit(1)
    )
    return found.first() is not None
