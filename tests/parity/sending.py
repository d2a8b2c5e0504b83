"""REST/MCP parity cases of the sender: settling a send whose outcome was lost."""

from __future__ import annotations

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_leads
from tests.campaigns.helpers import write_send
from tests.conftest import WorkspaceHandle
from tests.parity.campaigns import Args, campaign_lead, parity_campaign
from tests.parity.common import Foreign, Prepare


async def resolve_unknown_send_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws, leads=1))["id"]
    cl = await campaign_lead(http, ws, cid)
    send = await write_send(ws, cl, status="unknown")
    await _stop(ws, cl)
    path = {"id": cid, "campaignLeadId": cl}
    return [
        {**path, "sendId": send, "delivered": False, "confirm": True},
        {**path, "sendId": send, "delivered": True, "confirm": True},  # settled: 409
        {**path, "sendId": "snd_missing", "delivered": True, "confirm": True},
    ]


async def _stop(ws: WorkspaceHandle, campaign_lead_id: str) -> None:
    async def write(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .update()
            .where(campaign_leads.c.id == campaign_lead_id)
            .values(status="stopped", reason="Email 1: outcome unknown")
        )

    await ws.runtime.execute(await ws.principal(), write)


CASES: dict[str, Prepare] = {"resolve_unknown_send": resolve_unknown_send_args}


async def their_send(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their lost send, through their campaign and through mine."""
    cid = (await parity_campaign(http, theirs, leads=1))["id"]
    cl = await campaign_lead(http, theirs, cid)
    send = await write_send(theirs, cl, status="unknown")
    await _stop(theirs, cl)
    mine_id = (await parity_campaign(http, mine, leads=1))["id"]
    mine_cl = await campaign_lead(http, mine, mine_id)
    body = {"sendId": send, "delivered": True}
    return [
        {"id": cid, "campaignLeadId": cl, **body},
        {"id": mine_id, "campaignLeadId": cl, **body},
        {"id": mine_id, "campaignLeadId": mine_cl, **body},
    ]


FOREIGN: dict[str, Foreign] = {"resolve_unknown_send": their_send}
