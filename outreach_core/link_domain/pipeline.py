"""The `link-domains` worker's batch: every link domain whose next check is due, across workspaces, checked
in three steps with no transaction open during DNS and TLS (docs/link-domain.md, "The worker"):

1. `claim_due_checks` takes up to a batch of due rows (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite
   serialises writers) and moves their next check `CLAIM_FOR` ahead, so another worker process leaves them;
2. DNS and, where DNS is right, a TLS handshake for each (`probe.check_host`), a few at a time;
3. `record_checks` writes every result in one statement, each where the host name is still the one
   checked (a link domain set to another host name or removed meanwhile is left as it is).

A worker that dies between 1 and 3 loses nothing: the rows are due again `CLAIM_FOR` later.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from outreach_core.kernel.bulk import update_each
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import link_domains
from outreach_core.link_domain.probe import check_host
from outreach_core.link_domain.rules import Dns, Tls, decide, link_target
from outreach_core.link_domain.store import state_values

if TYPE_CHECKING:
    from outreach_core.kernel.endpoint import Background

CLAIM_FOR = dt.timedelta(minutes=5)
BATCH = 50
CONCURRENCY = 10


@dataclass(frozen=True)
class DueCheck:
    """A link domain as it was when claimed."""

    workspace_id: str
    hostname: str
    status: Any
    tls: Any
    since: dt.datetime
    verified_at: dt.datetime | None


def _due(ctx: SystemContext, *columns: Any) -> Any:
    table = system_scope(link_domains)
    return table.select(*columns).where(table.c.next_check_at <= ctx.now)


async def any_due_checks(ctx: SystemContext) -> bool:
    return (await ctx.conn.execute(_due(ctx, link_domains.c.workspace_id).limit(1))).first() is not None


async def claim_due_checks(ctx: SystemContext, limit: int) -> list[DueCheck]:
    """Up to `limit` link domains due for a check, earliest first, each held for `CLAIM_FOR`."""
    c = link_domains.c
    stmt = _due(ctx, c.workspace_id, c.hostname, c.status, c.tls, c.since, c.verified_at)
    stmt = stmt.order_by(c.next_check_at).limit(limit)
    if not ctx.settings.is_sqlite:
        stmt = stmt.with_for_update(skip_locked=True)
    rows = (await ctx.conn.execute(stmt)).all()
    if not rows:
        return []
    table = system_scope(link_domains)
    await ctx.conn.execute(
        table.update()
        .where(c.workspace_id.in_([r.workspace_id for r in rows]))
        .values(next_check_at=ctx.now + CLAIM_FOR)
    )
    return [DueCheck(r.workspace_id, r.hostname, r.status, r.tls, r.since, r.verified_at) for r in rows]


async def record_checks(ctx: SystemContext, results: list[tuple[DueCheck, Dns, Tls]]) -> int:
    """Write each check's state in one statement (`bulk.update_each`), where the link domain still has the
    host name that was checked; returns how many results there were."""
    rows = []
    for due, found, tls in results:
        decision = decide(
            previous=due.status,
            previous_tls=due.tls,
            verified_at=due.verified_at,
            dns=found,
            tls=tls,
            since=due.since,
            now=ctx.now,
        )
        rows.append(
            {"workspace_id": due.workspace_id, "hostname": due.hostname, **state_values(decision)}
            | {"checked_at": ctx.now}
        )
    await update_each(
        ctx,
        system_scope(link_domains).update(),
        rows,
        key="workspace_id",
        where=lambda v: [link_domains.c.hostname == v["hostname"]],
        values=lambda v: {n: v[n] for n in v if n not in ("workspace_id", "hostname")},
    )
    return len(rows)


async def recheck_link_domains(runtime: Background, batch: int = BATCH) -> int:
    """One pass: check every due link domain (up to `batch`); returns how many were checked."""
    if not await runtime.system_read(any_due_checks):  # idle polls take no write lock
        return 0
    claimed = await runtime.system(claim_due_checks, batch)
    if not claimed:
        return 0
    settings = runtime.settings
    target = link_target(settings.link_target, settings.public_url)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(due: DueCheck) -> tuple[DueCheck, Dns, Tls]:
        async with gate:
            found, tls = await check_host(runtime.ports, settings, due.hostname, target)
            return due, found, tls

    results = await asyncio.gather(*(one(d) for d in claimed))
    await runtime.system(record_checks, list(results))
    return len(claimed)
