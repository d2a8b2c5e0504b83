"""Small helpers for lead tests (REST calls with a workspace's key)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle, merge_every_queued_import_part


async def create(http: httpx.AsyncClient, ws: WorkspaceHandle, email: str, **fields: Any) -> dict[str, Any]:
    response = await http.post("/api/v1/leads", headers=ws.headers, json={"email": email, **fields})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def listing(http: httpx.AsyncClient, ws: WorkspaceHandle, **params: Any) -> dict[str, Any]:
    response = await http.get("/api/v1/leads", headers=ws.headers, params=params)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def emails(http: httpx.AsyncClient, ws: WorkspaceHandle, **params: Any) -> list[str]:
    return [lead["email"] for lead in (await listing(http, ws, pageSize=200, **params))["leads"]]


async def import_chunk(http: httpx.AsyncClient, ws: WorkspaceHandle, **body: Any) -> httpx.Response:
    return await http.post("/api/v1/leads/import", headers=ws.headers, json=body)


async def suppress(http: httpx.AsyncClient, ws: WorkspaceHandle, *entries: str) -> None:
    response = await http.post("/api/v1/suppressions", headers=ws.headers, json={"entries": list(entries)})
    assert response.status_code == 200, response.text


async def merge_imports(ws: WorkspaceHandle) -> None:
    """What the import worker does between requests: merge every queued import row."""
    await merge_every_queued_import_part(ws.runtime)


async def imported(http: httpx.AsyncClient, ws: WorkspaceHandle, **body: Any) -> dict[str, Any]:
    """Send one chunk, let the import worker merge it, and return the import as `get_import` then shows it."""
    response = await import_chunk(http, ws, **body)
    assert response.status_code == 200, response.text
    await merge_imports(ws)
    fetched = await http.get(f"/api/v1/leads/imports/{response.json()['id']}", headers=ws.headers)
    return fetched.json()  # type: ignore[no-any-return]


async def four_people(http: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, dict[str, Any]]:
    """Ann, Bob, Cid and Dee (no names or company), created through the API; keyed by address."""
    people = [
        ("ann@alpha.io", "Ann", "Zed", "Zeta Corp"),
        ("bob@beta.io", "Bob", "Young", "Alpha Inc"),
        ("cid@gamma.io", "Cid", "Xu", "Mid Co"),
        ("dee@delta.io", None, None, None),
    ]
    return {e: await create(http, ws, e, firstName=f, lastName=last, company=c) for e, f, last, c in people}
