"""Small helpers for lead tests (REST calls with a workspace's key)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle


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
