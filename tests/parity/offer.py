"""REST/MCP parity cases of the offer profile."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Prepare


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
