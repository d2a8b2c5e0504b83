"""Anonymous dynamic client registration is bounded, seen from outside (`POST /register`): registrations per
client address, redirect URIs and field sizes, and clients that never completed a grant are purged."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.oauth.helpers import REDIRECT_URI, pkce_pair
from tests.oauth.test_http_flow import obtain_code
from tests.served import served
from workers import oauth_purge

APP = {
    "redirect_uris": [REDIRECT_URI],
    "client_name": "Limits App",
    "token_endpoint_auth_method": "none",
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
}


async def test_registrations_per_client_address_are_limited(runtime: Runtime) -> None:
    async with served(runtime, oauth_registrations_per_hour=3) as base:
        async with httpx.AsyncClient(base_url=base, timeout=10) as http:
            statuses = [(await http.post("/register", json=APP)).status_code for _ in range(4)]
            assert statuses == [201, 201, 201, 429]
            refused = await http.post("/register", json=APP)
            assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
            assert int(refused.headers["retry-after"]) > 1000  # 3 an hour: the next one in ~20 minutes
            assert refused.headers["ratelimit-policy"] == "3;w=3600"
            # the rest of the service is not affected by this limit
            assert (await http.get("/.well-known/oauth-authorization-server")).status_code == 200
        # another client address has its own allowance
        other = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx.AsyncClient(base_url=base, timeout=10, transport=other) as http:
            assert (await http.post("/register", json=APP)).status_code == 201


def _uri(n: int) -> str:
    return f"https://app.example/{'x' * (n - len('https://app.example/'))}"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"redirect_uris": [f"https://app.example/cb{i}" for i in range(11)]}, "invalid_redirect_uri"),
        ({"redirect_uris": [_uri(1001)]}, "invalid_redirect_uri"),
        (
            {"redirect_uris": [f"https://app.example/{i}/{'x' * 1900}" for i in range(20)]},
            "invalid_redirect_uri",
        ),
        ({"client_name": "x" * 201}, "invalid_client_metadata"),
        ({"client_name": "Good\r\nApp"}, "invalid_client_metadata"),
        ({"client_name": "a\u0007\u001b[31mb"}, "invalid_client_metadata"),
        ({"client_uri": _uri(1001)}, "invalid_client_metadata"),
        ({"logo_uri": _uri(1001)}, "invalid_client_metadata"),
        ({"tos_uri": _uri(1001)}, "invalid_client_metadata"),
        ({"policy_uri": _uri(1001)}, "invalid_client_metadata"),
        ({"jwks_uri": _uri(1001)}, "invalid_client_metadata"),
        ({"contacts": [f"c{i}@app.example" for i in range(6)]}, "invalid_client_metadata"),
        ({"contacts": ["c" * 321]}, "invalid_client_metadata"),
        ({"software_id": "s" * 201}, "invalid_client_metadata"),
        ({"software_version": "v" * 201}, "invalid_client_metadata"),
        ({"scope": "s" * 501}, "invalid_client_metadata"),
        ({"jwks": {"keys": [{"kty": "RSA", "n": "x" * 30_000, "e": "AQAB"}]}}, "invalid_client_metadata"),
    ],
)
async def test_registration_field_sizes_are_capped(
    http: httpx.AsyncClient, change: dict[str, Any], error: str
) -> None:
    response = await http.post("/register", json={**APP, **change})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == error


async def test_the_largest_registration_allowed_is_accepted(http: httpx.AsyncClient) -> None:
    biggest = {
        **APP,
        "redirect_uris": [f"https://app.example/{i}/" + "x" * 970 for i in range(10)],
        "client_name": "n" * 200,
        "client_uri": _uri(1000),
    }
    response = await http.post("/register", json=biggest)
    assert response.status_code == 201, response.text


async def authorize_status(http: httpx.AsyncClient, client_id: str) -> int:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": pkce_pair()[1],
        "code_challenge_method": "S256",
        "state": "s",
    }
    return (await http.get("/authorize", params=query)).status_code


async def test_clients_that_never_completed_a_grant_are_purged(
    runtime: Runtime, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    unused = (await http.post("/register", json=APP)).json()
    connected = (await http.post("/register", json=APP)).json()
    await obtain_code(http, connected, ws.api_key, pkce_pair()[1], None)
    ttl = timedelta(seconds=runtime.settings.oauth_unused_client_ttl_s)
    assert ttl == timedelta(days=1)  # the documented default

    def at(delta: timedelta) -> Runtime:
        clock = FixedClock(runtime.ports.clock.now() + delta)
        return Runtime(runtime.settings, engine=runtime.engine, ports=Ports(clock=clock))

    await oauth_purge.tick(at(ttl - timedelta(minutes=5)))
    assert await authorize_status(http, unused["client_id"]) == 302  # still within its day
    await oauth_purge.tick(at(ttl + timedelta(minutes=5)))
    assert await authorize_status(http, unused["client_id"]) == 400  # gone: "client not found"
    assert await authorize_status(http, connected["client_id"]) == 302  # consented once: kept
