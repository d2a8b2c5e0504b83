"""REST/MCP parity cases of connected apps (OAuth)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.oauth.helpers import connect, register
from tests.parity.common import Args, Foreign, Prepare, no_args


async def disconnect_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": "grant_missing", "confirm": True}]


CASES: dict[str, Prepare] = {
    "list_connected_apps": no_args,
    "disconnect_app": disconnect_args,
}


async def their_app(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    client_id = await register(theirs.runtime, "Their App")
    return [{"id": (await connect(theirs.runtime, theirs.api_key, client_id)).grant_id}]


async def their_app_listed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    await their_app(http, mine, theirs)
    return [{}]


FOREIGN: dict[str, Foreign] = {
    "list_connected_apps": their_app_listed,
    "disconnect_app": their_app,
}
