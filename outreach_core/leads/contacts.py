"""How many leads the workspace has, from the trigger-kept counters (`targets.lead_counts`, no scan), and
the plan's contacts limit that creating and importing leads respect."""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import func

from outreach_core.billing.rules import in_force
from outreach_core.billing.store import plan_row
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.errors import QuotaExceeded
from outreach_core.leads.schemas import ListLeadsQuery
from outreach_core.targets.lead_counts import lead_counts


async def counted_leads(ctx: WorkspaceContext, query: ListLeadsQuery | None) -> int:
    """Leads of the workspace matching status/verify/esp filters, from the trigger-kept counters (no scan)."""
    counts = lead_counts(ctx)
    stmt = counts.select().with_only_columns(func.coalesce(func.sum(counts.c.n), 0))
    if query is not None:
        if query.status:
            stmt = stmt.where(counts.c.status.in_(query.status))
        if query.verify:
            stmt = stmt.where(counts.c.verify_status.in_(query.verify))
        if query.esp:
            stmt = stmt.where(counts.c.esp.in_(query.esp))
    return int((await ctx.conn.execute(stmt)).scalar_one())


class ContactsRoom(NamedTuple):
    plan_name: str
    limit: int
    current: int


async def contacts_room(ctx: WorkspaceContext) -> ContactsRoom | None:
    """The plan's contacts limit and the workspace's leads now; None when no limit applies (without an
    active plan nothing limits single leads, and importing needs a plan anyway)."""
    plan = in_force(await plan_row(ctx), ctx.now)
    if plan is None:
        return None
    return ContactsRoom(plan.name, plan.contacts, await counted_leads(ctx, None))


async def ensure_contacts_room(ctx: WorkspaceContext, adding: int) -> None:
    """Refuse with 429 `quota_exceeded` when `adding` new leads would pass the plan's contacts limit."""
    room = await contacts_room(ctx)
    if room is not None and room.current + adding > room.limit:
        raise QuotaExceeded(
            f"The {room.plan_name} plan allows {room.limit:,} contacts; the workspace has {room.current:,} "
            f"and this would add {adding:,}. Delete leads or change plan.",
            {"limit": room.limit, "current": room.current, "adding": adding},
        )
