"""What the `domains` worker runs: every sending domain of every workspace checked again daily, in two short
transactions with the lookups between them, never inside one:

1. `claim_due_domains` takes sending domains whose `next_check_at` has come (new ones at once), across
   workspaces (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite serialises writers), and moves their
   `next_check_at` a lease ahead, so another worker leaves them alone and a crash only delays them;
2. each distinct domain is checked once (a domain several workspaces use is looked up once), outside any
   transaction, a few at a time;
3. `record_domain_checks` stores each report as the latest of every claimed row of its domain, the previous
   score moved into the row's history, and sets the next check a day later.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, or_

from outreach_core.deliverability.checker import run_check
from outreach_core.deliverability.schemas import DomainReport
from outreach_core.deliverability.store import with_report
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import sending_domains

if TYPE_CHECKING:
    from outreach_core.kernel.endpoint import Background

LEASE = timedelta(minutes=15)
CONCURRENCY = 4
"""Domains checked at once by one worker."""


async def claim_due_domains(ctx: SystemContext, limit: int) -> list[tuple[str, str]]:
    """Up to `limit` due (workspace, domain) rows, their next check moved a lease ahead."""
    table = system_scope(sending_domains)
    due = or_(sending_domains.c.next_check_at.is_(None), sending_domains.c.next_check_at <= ctx.now)
    stmt = (
        table.select(sending_domains.c.workspace_id, sending_domains.c.domain)
        .where(due)
        .order_by(sending_domains.c.next_check_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    rows = [(str(r.workspace_id), str(r.domain)) for r in (await ctx.conn.execute(stmt)).all()]
    for workspace_id, domain in rows:
        await ctx.conn.execute(
            table.update().where(_row(workspace_id, domain)).values(next_check_at=ctx.now + LEASE)
        )
    return rows


async def record_domain_checks(
    ctx: SystemContext, claimed: list[tuple[str, str]], reports: dict[str, DomainReport]
) -> None:
    """Store each domain's report on every claimed row of it (a row deleted meanwhile is left deleted)."""
    table = system_scope(sending_domains)
    for workspace_id, domain in claimed:
        report = reports.get(domain)
        if report is None:
            continue
        found = (await ctx.conn.execute(table.select().where(_row(workspace_id, domain)))).one_or_none()
        if found is None:
            continue
        await ctx.conn.execute(
            table.update().where(_row(workspace_id, domain)).values(**with_report(found, report, ctx.now))
        )


def _row(workspace_id: str, domain: str) -> Any:
    return and_(sending_domains.c.workspace_id == workspace_id, sending_domains.c.domain == domain)


async def recheck_domains(runtime: Background, batch: int) -> int:
    """One batch: claim, check, record. Returns how many rows were claimed (0 when none were due)."""
    claimed = await runtime.system(claim_due_domains, batch)
    if not claimed:
        return 0
    limit = asyncio.Semaphore(CONCURRENCY)
    reports: dict[str, DomainReport] = {}

    async def check(domain: str) -> None:
        async with limit:
            reports[domain] = await run_check(
                runtime.ports, runtime.settings, runtime.ports.clock.now(), domain, None, fresh=True
            )

    await asyncio.gather(*(check(d) for d in sorted({d for _, d in claimed})))
    await runtime.system(record_domain_checks, claimed, reports)
    return len(claimed)
