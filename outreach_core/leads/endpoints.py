from __future__ import annotations

from sqlalchemy import func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.leads.operations import (
    create_lead,
    delete_leads,
    get_lead,
    get_lead_stats,
    list_leads,
    mark_won,
    update_lead,
)
from outreach_core.leads.schemas import (
    CreateLeadIn,
    LeadDetail,
    LeadPage,
    LeadStats,
    LeadStatsQuery,
    ListLeadsQuery,
    MarkWonIn,
    UpdateLeadIn,
)
from outreach_core.targets.schemas import Deleted, TargetIn
from outreach_core.targets.selection import target_ids


async def _count_target(ctx: WorkspaceContext, body: TargetIn) -> int:
    """How many leads a target selects (for confirmations)."""
    lead_table = scoped(ctx, leads)
    stmt = lead_table.select(func.count()).where(leads.c.id.in_(target_ids(ctx, body.target)))
    return int((await ctx.conn.execute(stmt)).scalar_one())


async def _describe_delete(ctx: WorkspaceContext, body: TargetIn) -> str:
    n = await _count_target(ctx, body)
    return (
        f"Delete {n:,} lead{'s' if n != 1 else ''} for good, with their list memberships and labels? "
        "Their addresses stay on the suppression list if they are on it."
    )


ENDPOINTS = (
    Endpoint(
        "GET",
        "/leads",
        list_leads,
        LeadPage,
        query=ListLeadsQuery,
        read_only=True,
        tag="leads",
    ),
    Endpoint(
        "GET",
        "/leads/stats",
        get_lead_stats,
        LeadStats,
        query=LeadStatsQuery,
        read_only=True,
        tag="leads",
        title="Get lead counts",
    ),
    Endpoint(
        "POST",
        "/leads/delete",
        delete_leads,
        Deleted,
        body=TargetIn,
        destructive=True,
        confirm=_describe_delete,
        tag="leads",
        idempotent=True,
    ),
    Endpoint("POST", "/leads", create_lead, LeadDetail, body=CreateLeadIn, tag="leads"),
    Endpoint("GET", "/leads/{id}", get_lead, LeadDetail, read_only=True, tag="leads"),
    Endpoint(
        "PATCH",
        "/leads/{id}",
        update_lead,
        LeadDetail,
        body=UpdateLeadIn,
        tag="leads",
        destructive=True,
        idempotent=True,
    ),
    Endpoint(
        "POST", "/leads/{id}/won", mark_won, LeadDetail, body=MarkWonIn, tag="leads", title="Mark lead won"
    ),
)
