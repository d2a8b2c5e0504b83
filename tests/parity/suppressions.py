"""REST/MCP parity cases of the suppression list."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, foreign_targets, row_lead, unique


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


async def _their_entry(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> str:
    entry = f"theirs-{next(unique)}.test"
    added = await http.post("/api/v1/suppressions", headers=theirs.headers, json={"entries": [entry]})
    assert added.status_code == 200, added.text
    return entry


async def their_entries_listed(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    entry = await _their_entry(http, theirs)
    return [{}, {"search": entry}]


async def their_entries(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their suppressed domain and the address of one of their leads, suppressed (or removed) here: each
    workspace has its own list, and their lead stays active."""
    from tests.lists.helpers import add_leads

    address = f"p{next(unique)}@parity.test"
    await add_leads(theirs, address)
    return [{"entries": [await _their_entry(http, theirs), address]}]


async def their_leads_suppressed(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    return [{"target": target} for target in await foreign_targets(http, theirs)]


FOREIGN: dict[str, Foreign] = {
    "list_suppressions": their_entries_listed,
    "add_suppressions": their_entries,
    "remove_suppressions": their_entries,
    "suppress_leads": their_leads_suppressed,
}
