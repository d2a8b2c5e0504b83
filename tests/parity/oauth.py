"""REST/MCP parity cases of connected apps (OAuth)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Prepare,
    no_args,
)


async def disconnect_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": "grant_missing", "confirm": True}]


CASES: dict[str, Prepare] = {
    "list_connected_apps": no_args,
    "disconnect_app": disconnect_args,
}
