"""401 for missing, malformed, unknown, expired and revoked credentials, on REST and on /mcp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from outreach_core.kernel.context import system_scope
from outreach_core.kernel.db.tables import api_keys
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.doors import MCP_HEADERS, MCP_INITIALIZE


async def _credential(kind: str, http: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, str]:
    if kind == "missing":
        return {}
    if kind == "malformed-scheme":
        return {"Authorization": f"Basic {ws.api_key}"}
    if kind == "malformed-empty":
        return {"Authorization": "Bearer"}
    if kind == "malformed-shape":
        return {"Authorization": "Bearer not-a-key"}
    if kind == "unknown":
        return {"Authorization": "Bearer osk_" + "A" * 43}
    key = (await http.post("/api/v1/apiKeys/create", headers=ws.headers, json={"name": kind})).json()
    if kind == "revoked":
        await http.post("/api/v1/apiKeys/revoke", headers=ws.headers, json={"id": key["id"]})
    elif kind == "expired":

        async def expire(ctx: object) -> None:
            t = system_scope(api_keys)
            await ctx.conn.execute(  # type: ignore[attr-defined]
                t.update()
                .where(t.c.id == key["id"])
                .values(expires_at=datetime.now(UTC) - timedelta(minutes=1))
            )

        await ws.runtime.system(expire)
    return {"Authorization": f"Bearer {key['key']}"}


KINDS = ["missing", "malformed-scheme", "malformed-empty", "malformed-shape", "unknown", "revoked", "expired"]


@pytest.mark.parametrize("kind", KINDS)
async def test_rest_refuses(kind: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    headers = await _credential(kind, http, ws)
    for method, path in (
        ("GET", "/api/v1/me"),
        ("GET", "/api/v1/api-keys"),
        ("PATCH", "/api/v1/settings/sending"),
    ):
        response = await http.request(method, path, headers=headers, json={} if method == "PATCH" else None)
        assert response.status_code == 401, (kind, path, response.text)
        assert response.headers["www-authenticate"].lower().startswith("bearer")
        assert response.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("kind", KINDS)
async def test_mcp_refuses(kind: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    headers = await _credential(kind, http, ws)
    response = await http.post("/mcp", headers={**MCP_HEADERS, **headers}, json=MCP_INITIALIZE)
    assert response.status_code == 401, (kind, response.text)
    assert response.headers["www-authenticate"].lower().startswith("bearer")


async def test_valid_key_is_accepted_on_both_doors(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    assert (await http.get("/api/v1/me", headers=ws.headers)).status_code == 200
    response = await http.post("/mcp", headers={**MCP_HEADERS, **ws.headers}, json=MCP_INITIALIZE)
    assert response.status_code == 200, response.text
