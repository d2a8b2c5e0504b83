"""REST/MCP parity cases and foreign cases of billing on the session server (`local` billing)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, foreign_targets, no_args


async def checkout_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"plan": "pro", "interval": "year", "returnTo": "onboarding"},
        {"plan": "starter", "interval": "month"},
        {"plan": "enterprise", "interval": "month"},
        {"plan": "growth", "interval": "week"},
    ]


async def dedicated_ips_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"quantity": 2}, {"quantity": 0}, {"quantity": 51}, {"quantity": -1}, {}]


CASES: dict[str, Prepare] = {
    "get_billing": no_args,
    "start_checkout": checkout_args,
    "open_billing_portal": no_args,
    "sync_billing": no_args,
    "set_dedicated_ips": dedicated_ips_args,
}


async def _their_plan(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> None:
    """Their workspace buys dedicated IPs on its plan and holds a lead, a list and a label."""
    bought = await http.post("/api/v1/billing/setDedicatedIps", headers=theirs.headers, json={"quantity": 3})
    assert bought.status_code == 200, bought.text
    await foreign_targets(http, theirs)


async def their_billing(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Reading, opening the portal or syncing my billing shows and changes only mine."""
    await _their_plan(http, theirs)
    return [{}]


async def their_plan_changed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """A checkout of mine is for my workspace only: theirs keeps its plan."""
    await _their_plan(http, theirs)
    return [{"plan": "pro", "interval": "year"}]


async def their_ips_changed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Setting my dedicated IPs leaves their add-ons as they are."""
    await _their_plan(http, theirs)
    return [{"quantity": 1}]


FOREIGN: dict[str, Foreign] = {
    "get_billing": their_billing,
    "start_checkout": their_plan_changed,
    "open_billing_portal": their_billing,
    "sync_billing": their_billing,
    "set_dedicated_ips": their_ips_changed,
}
