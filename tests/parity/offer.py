"""REST/MCP parity cases and foreign cases of the offer profile."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare


async def get_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{}]


async def save_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"company": "Parity Co", "product": "Parity checks", "proof": "One\nTwo", "tone": "direct"},
        {},
        {"company": "x" * 121},
        {"tone": "loud"},
        {"cta": "line\nbreak"},
    ]


CASES: dict[str, Prepare] = {"get_offer_profile": get_args, "save_offer_profile": save_args}


async def _their_profile(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> None:
    body = {"company": "Their Co", "product": "Their product", "proof": "Their proof"}
    saved = await http.put("/api/v1/offer-profile", headers=theirs.headers, json=body)
    assert saved.status_code == 200, saved.text


async def their_profile(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Each workspace has its own profile: mine is read, theirs is not shown."""
    await _their_profile(http, theirs)
    return [{}]


async def their_profile_replaced(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Saving my profile leaves theirs as it is."""
    await _their_profile(http, theirs)
    return [{"company": "Mine Co", "product": "Mine"}]


FOREIGN: dict[str, Foreign] = {
    "get_offer_profile": their_profile,
    "save_offer_profile": their_profile_replaced,
}
