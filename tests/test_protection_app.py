"""Protection as the composed service applies it: per-credential rate limit, body size limit, request ids."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from outreach_app.asgi import build_app
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from tests.conftest import MakeWorkspace
from tests.served import served


@pytest.fixture
async def strict_client(settings: Settings, runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    strict = settings.model_copy(
        update={"rate_limit_per_minute": 60, "rate_limit_burst": 3, "max_request_bytes": 2048}
    )
    app: Any = build_app(Runtime(strict, engine=runtime.engine), flush_usage=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=strict.public_url
    ) as client:
        yield client


async def test_rate_limit_is_per_credential(
    strict_client: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    first, second = await make_workspace(), await make_workspace()
    statuses = [(await strict_client.get("/api/v1/me", headers=first.headers)).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = await strict_client.get("/api/v1/me", headers=first.headers)
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.headers["ratelimit-remaining"] == "0" and "ratelimit-limit" in limited.headers
    # another credential has its own bucket, and ping is never limited
    assert (await strict_client.get("/api/v1/me", headers=second.headers)).status_code == 200
    assert (await strict_client.get("/api/v1/ping")).status_code == 200


async def test_oversized_body_is_413_and_changes_nothing(
    strict_client: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    big = {"name": "x", "padding": "y" * 4096}
    response = await strict_client.post("/api/v1/apiKeys/create", headers=ws.headers, json=big)
    assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"
    keys = (await strict_client.get("/api/v1/api-keys", headers=ws.headers)).json()
    assert [k["name"] for k in keys] == ["outreach init"]


async def test_every_response_carries_a_request_id(strict_client: httpx.AsyncClient) -> None:
    response = await strict_client.get("/api/v1/ping", headers={"X-Request-Id": "trace-123"})
    assert response.headers["x-request-id"] == "trace-123"
    generated = await strict_client.get("/api/v1/ping")
    assert len(generated.headers["x-request-id"]) >= 16


async def test_rate_limit_is_keyed_on_the_credential_not_its_spelling(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    """`bearer`, `BEARER` and extra spaces are all accepted as the same key, so they share one bucket."""
    ws, other = await make_workspace(), await make_workspace()
    key = ws.api_key
    spellings = [
        f"Bearer {key}",
        f"bearer {key}",
        f"BEARER {key}",
        f"Bearer   {key}",
        f"bEaReR {key}",
        f"Bearer \t{key}",
        f"BeArEr    {key}",
        f"bearer  {key}",
    ]
    async with (
        served(runtime, rate_limit_per_minute=1, rate_limit_burst=5) as base,
        httpx.AsyncClient(base_url=base, timeout=10) as http,
    ):
        statuses = []
        for spelling in spellings:
            response = await http.get("/api/v1/me", headers={"Authorization": spelling})
            statuses.append(response.status_code)
        assert statuses == [200] * 5 + [429] * 3
        # the key's bucket is empty on MCP too; another key has its own bucket
        mcp = await http.post("/mcp", headers={"Authorization": f"bearer {key}"}, json={})
        assert mcp.status_code == 429
        assert (await http.get("/api/v1/me", headers=other.headers)).status_code == 200
        # malformed headers are counted per client address, not one new bucket per made-up value
        junk = [
            (await http.get("/api/v1/me", headers={"Authorization": f"Basic {n}"})).status_code
            for n in range(6)
        ]
        assert junk == [401] * 5 + [429]
