"""REST/MCP parity cases of API keys."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, new_key, no_args


async def create_key_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"name": "parity", "expiresInDays": 30}, {"name": ""}, {"name": "n", "expiresInDays": 400}]


async def revoke_key_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": (await new_key(http, ws))["id"], "confirm": True}, {"id": "key_missing", "confirm": True}]


CASES: dict[str, Prepare] = {
    "list_api_keys": no_args,
    "create_api_key": create_key_args,
    "revoke_api_key": revoke_key_args,
}


async def their_key_listed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    await new_key(http, theirs, "theirs")
    return [{}]


async def their_key_name(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    await new_key(http, theirs, "theirs")
    return [{"name": "theirs"}]


async def their_key_revoked(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": (await new_key(http, theirs, "theirs"))["id"]}]


FOREIGN: dict[str, Foreign] = {
    "list_api_keys": their_key_listed,
    "create_api_key": their_key_name,
    "revoke_api_key": their_key_revoked,
}
