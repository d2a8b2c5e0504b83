"""REST/MCP parity cases and foreign cases of write_sequence on the session server, which has no AI (the
drafting itself is compared in tests/billing/test_doors_ai.py)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare


async def write_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    bare = (await http.post("/api/v1/campaigns", headers=ws.headers, json={"name": "Parity"})).json()["id"]
    await http.put("/api/v1/offer-profile", headers=ws.headers, json={"company": "Parity Co"})
    return [
        {"id": bare, "mode": "sequence", "steps": 2},
        {"id": bare, "mode": "rewrite"},
        {"id": bare, "mode": "angle", "variantId": "var_missing"},
        {"id": "cmp_missing", "mode": "sequence"},
        {"id": bare, "mode": "sequence", "steps": 0},
    ]


CASES: dict[str, Prepare] = {"write_sequence": write_args}


async def _campaign_with_profile(http: httpx.AsyncClient, ws: WorkspaceHandle) -> tuple[str, str]:
    """A new campaign (one empty email) of a workspace with an offer profile: its id and its variant's."""
    saved = await http.put("/api/v1/offer-profile", headers=ws.headers, json={"company": "Parity Co"})
    assert saved.status_code == 200, saved.text
    created = await http.post("/api/v1/campaigns", headers=ws.headers, json={"name": "Parity"})
    assert created.status_code == 200, created.text
    campaign = (await http.get(f"/api/v1/campaigns/{created.json()['id']}", headers=ws.headers)).json()
    return campaign["id"], campaign["steps"][0]["variants"][0]["id"]


async def their_campaign(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their campaign to write into, and their variant to redraft in my campaign: both not found, before
    any AI is asked."""
    mine_campaign, _ = await _campaign_with_profile(http, mine)
    campaign, variant = await _campaign_with_profile(http, theirs)
    return [
        {"id": campaign, "mode": "sequence", "steps": 1},
        {"id": mine_campaign, "mode": "rewrite", "variantId": variant},
    ]


FOREIGN: dict[str, Foreign] = {"write_sequence": their_campaign}
