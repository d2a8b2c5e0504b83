"""REST/MCP parity cases of the suppression list."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Prepare,
    row_lead,
    unique,
)


async def list_suppressions_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    body = {"entries": [f"p{next(unique)}@parity.test"], "reason": "parity"}
    await http.post("/api/v1/suppressions", headers=ws.headers, json=body)
    return [{}, {"search": "parity", "pageSize": 10}, {"page": 0}]


async def add_suppressions_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    n = next(unique)
    return [
        {"entries": [f"p{n}@parity.test", f"parity-{n}.test", "not valid"], "reason": "parity"},
        {"entries": []},
    ]


async def remove_suppressions_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    entry = f"parity-{next(unique)}.test"
    await http.post("/api/v1/suppressions", headers=ws.headers, json={"entries": [entry]})
    return [{"entries": [entry, "nothing.test"]}, {"entries": []}]


async def suppress_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"target": {"ids": [await row_lead(ws)]}, "reason": "parity"}, {"target": {}}]


CASES: dict[str, Prepare] = {
    "list_suppressions": list_suppressions_args,
    "add_suppressions": add_suppressions_args,
    "remove_suppressions": remove_suppressions_args,
    "suppress_leads": suppress_leads_args,
}
