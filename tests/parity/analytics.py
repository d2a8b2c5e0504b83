"""REST/MCP parity cases and foreign cases of the analytics: workspaces with a hand-built ledger (sends, a
reply, a bounce, a win) counted by the rollups as the sender and the inbox count them."""

from __future__ import annotations

import datetime as dt

import httpx

from tests.analytics.ledger import Ledger
from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare

_SEEDED: dict[str, str] = {}


async def seeded(ws: WorkspaceHandle) -> str:
    """A campaign of `ws` with two variants, sends from a mailbox over the last days, a reply labeled
    positive, a refusal and a win (once per workspace); returns the campaign id."""
    if ws.workspace_id not in _SEEDED:
        ledger = Ledger(ws)
        box = await ledger.mailbox()
        campaign, variants = await ledger.campaign([2, 1])
        now = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
        first = None
        for i in range(6):
            lead = await ledger.lead(
                country="DE" if i % 2 else None, timezone="Europe/Paris" if i < 3 else None
            )
            sent = await ledger.send(
                campaign,
                lead,
                box,
                at=now - dt.timedelta(days=i, hours=1),
                variant_id=variants[0][i % 2],
                status="bounced" if i == 5 else "sent",
            )
            first = first or sent
            if i == 0:
                await ledger.won(lead, now - dt.timedelta(minutes=5), campaign)
        assert first is not None
        await ledger.reply(first, at=now - dt.timedelta(minutes=30), label="positive")
        _SEEDED[ws.workspace_id] = campaign
    return _SEEDED[ws.workspace_id]


async def overview_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    await seeded(ws)
    return [{"days": 7}, {}, {"days": 90}, {"days": 14}]


async def stats_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    campaign = await seeded(ws)
    return [{"days": 7, "campaignId": campaign}, {"days": 30}, {"campaignId": "cmp_01nothing"}, {"days": 8}]


async def campaign_analytics_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    await seeded(ws)
    return [{"days": 30}, {"days": 7}, {"days": 0}]


async def breakdown_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"id": await seeded(ws)}, {"id": "cmp_01nothing"}]


CASES: dict[str, Prepare] = {
    "get_analytics_overview": overview_args,
    "get_campaign_stats": stats_args,
    "get_campaign_analytics": campaign_analytics_args,
    "get_campaign_breakdown": breakdown_args,
}


async def their_numbers(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their ledger counts nowhere in mine."""
    await seeded(theirs)
    return [{"days": 30}]


async def their_campaign(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"days": 30, "campaignId": await seeded(theirs)}]


async def their_breakdown(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await seeded(theirs)}]


FOREIGN: dict[str, Foreign] = {
    "get_analytics_overview": their_numbers,
    "get_campaign_stats": their_campaign,
    "get_campaign_analytics": their_numbers,
    "get_campaign_breakdown": their_breakdown,
}
