"""REST/MCP parity cases and foreign cases of onboarding on the session server: no website fetches reach a
private address there, and it has no AI (the AI and website paths are compared in
tests/billing/test_doors_ai.py)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, parity_name


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


async def _their_answers(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> None:
    """Their onboarding answers and offer profile."""
    body = {"sendingDomain": "their.parity.test", "expectedVolume": 700}
    answered = await http.post("/api/v1/onboarding/save", headers=theirs.headers, json=body)
    profile = await http.put("/api/v1/offer-profile", headers=theirs.headers, json={"company": "Their Co"})
    assert (answered.status_code, profile.status_code) == (200, 200), (answered.text, profile.text)


async def their_workspace(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """A new workspace of mine is mine alone: theirs gets no member, key or change."""
    await _their_answers(http, theirs)
    return [{"name": "Mine Too", "slug": parity_name(), "audience": "own"}]


async def their_answers(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Saving my onboarding answers leaves theirs as they are."""
    await _their_answers(http, theirs)
    return [{"sendingDomain": "mine.parity.test", "expectedVolume": 10}]


async def their_draft(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """A draft of mine never touches their profile (the session server fetches no websites: 409)."""
    await _their_answers(http, theirs)
    return [{"url": "https://mine-parity.example.com/"}]


FOREIGN: dict[str, Foreign] = {
    "create_workspace": their_workspace,
    "save_onboarding": their_answers,
    "draft_offer": their_draft,
}
