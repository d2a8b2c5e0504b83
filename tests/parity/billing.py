"""REST/MCP parity cases of billing on the session server (`local` billing)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Prepare, no_args


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
