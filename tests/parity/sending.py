"""REST/MCP parity cases of the sender: settling a send whose outcome was lost."""

from __future__ import annotations

import httpx

from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import campaign_leads
from tests.campaigns.helpers import write_send
from tests.conftest import WorkspaceHandle
from tests.parity.campaigns import Args, campaign_lead, parity_campaign
from tests.parity.common import Prepare


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
