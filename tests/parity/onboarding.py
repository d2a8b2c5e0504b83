"""REST/MCP parity cases of onboarding on the session server: no website fetches reach a private address
there, and it has no AI (the AI and website paths are compared in tests/billing/test_doors_ai.py)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Prepare, parity_name


async def create_workspace_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    slug = parity_name()
    body = {"name": "Parity Outbound", "slug": slug, "audience": "own", "sendingDomain": "parity.test"}
    return [body, body, {**body, "slug": "Bad Slug"}, {**body, "slug": parity_name(), "audience": "all"}]


async def save_onboarding_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"sendingDomain": "mail.parity.test", "expectedVolume": 5000},
        {"expectedVolume": 0},
        {"sendingDomain": "no domain here", "expectedVolume": 1},
        {"expectedVolume": 100_000_001},
    ]


async def draft_offer_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"url": "http://10.0.0.1/"}, {"url": "localhost"}, {"url": "ab"}, {"url": "ftp://parity.test/"}]


CASES: dict[str, Prepare] = {
    "create_workspace": create_workspace_args,
    "save_onboarding": save_onboarding_args,
    "draft_offer": draft_offer_args,
}
