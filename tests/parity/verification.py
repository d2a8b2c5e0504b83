"""REST/MCP parity cases of lead verification."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, foreign_targets, unique


async def verify_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    from tests.verification.helpers import add_leads

    [lead] = await add_leads(ws, [f"p{next(unique)}@parity.test"], verify_status="unknown")
    return [
        {"target": {"ids": [lead, "lead_missing"]}},
        {"target": {"filter": {"verify": ["verifying"]}}},
        {"target": {"all": True}},
        {"target": {}},
    ]


CASES: dict[str, Prepare] = {
    "verify_leads": verify_leads_args,
}


async def their_leads_verified(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    return [{"target": target} for target in await foreign_targets(http, theirs)]


FOREIGN: dict[str, Foreign] = {"verify_leads": their_leads_verified}
