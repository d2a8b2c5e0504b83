"""OAuth 2.1 end to end over real HTTP against the live server: discovery, dynamic registration, /authorize
with PKCE S256 and a resource indicator, the consent page, /token, MCP calls, refresh, revocation and
disconnect."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mcp_server.consent import CONSENT_PURPOSE
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.signing import sign
from tests.conftest import MakeWorkspace
from tests.doors import MCP_INITIALIZE
from tests.oauth.helpers import REDIRECT_URI, McpSession, pkce_pair


async def metadata(http: httpx.AsyncClient) -> dict[str, Any]:
    response = await http.get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


async def register_client(http: httpx.AsyncClient, name: str = "E2E App", **extra: Any) -> dict[str, Any]:
    meta = await metadata(http)
    response = await http.post(
        meta["registration_endpoint"],
        json={
            "redirect_uris": [REDIRECT_URI],
            "client_name": name,
            "client_uri": "https://app.example/",
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            **extra,
        },
    )
    assert response.status_code == 201, response.text
    info: dict[str, Any] = response.json()
    return info


async def open_consent(
    http: httpx.AsyncClient, client: dict[str, Any], challenge: str, state: str, resource: str | None
) -> httpx.Response:
    """GET /authorize and follow its redirect to the consent page (as a browser would)."""
    meta = await metadata(http)
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT_URI,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
    }
    if resource is not None:
        query["resource"] = resource
    authorize = await http.get(meta["authorization_endpoint"], params=query)
    assert authorize.status_code == 302, authorize.text
    location = authorize.headers["location"]
    assert location.startswith(f"{str(http.base_url).rstrip('/')}/oauth/consent?request="), location
    page = await http.get(location)
    assert page.status_code == 200
    return page


def hidden_request(page: httpx.Response) -> str:
    found = re.search(r'name="request" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


async def submit(http: httpx.AsyncClient, signed: str, decision: str, api_key: str = "") -> httpx.Response:
    return await http.post(
        "/oauth/consent", data={"request": signed, "api_key": api_key, "decision": decision}
    )


def redirect_params(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(REDIRECT_URI + "?"), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def obtain_code(
    http: httpx.AsyncClient, client: dict[str, Any], api_key: str, challenge: str, resource: str | None
) -> str:
    state = secrets.token_urlsafe(8)
    page = await open_consent(http, client, challenge, state, resource)
    params = redirect_params(await submit(http, hidden_request(page), "grant", api_key))
    assert params["state"] == state
    return params["code"]


async def token_request(http: httpx.AsyncClient, **form: str) -> httpx.Response:
    return await http.post((await metadata(http))["token_endpoint"], data=form)


async def exchange(
    http: httpx.AsyncClient, client: dict[str, Any], code: str, verifier: str
) -> httpx.Response:
    return await token_request(
        http,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT_URI,
        client_id=client["client_id"],
        code_verifier=verifier,
        **_secret(client),
    )


def _secret(client: dict[str, Any]) -> dict[str, str]:
    return {"client_secret": client["client_secret"]} if client.get("client_secret") else {}


async def get_me(mcp_session: McpSession, token: str) -> dict[str, Any]:
    async with mcp_session(token) as mcp:
        result = await mcp.call_tool("get_me", {})
    assert not result.is_error, result
    me: dict[str, Any] = result.structured_content
    return me


async def mcp_status(http: httpx.AsyncClient, token: str) -> httpx.Response:
    return await http.post(
        "/mcp",
        json=MCP_INITIALIZE,
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
    )


# --- the whole flow -----------------------------------------------------------------------------------------


async def test_full_oauth_flow_over_http(
    http: httpx.AsyncClient, live_server: str, make_workspace: MakeWorkspace, mcp_session: McpSession
) -> None:
    ws = await make_workspace()
    mcp_url = f"{live_server}/mcp"

    # Discovery: protected-resource metadata names us as the authorization server.
    prm = await http.get("/.well-known/oauth-protected-resource/mcp")
    assert prm.status_code == 200
    assert prm.json()["resource"].rstrip("/") == mcp_url
    issuer = prm.json()["authorization_servers"][0].rstrip("/")
    assert issuer == live_server
    meta = await metadata(http)
    assert meta["issuer"].rstrip("/") == issuer
    assert meta["code_challenge_methods_supported"] == ["S256"]
    for endpoint in (
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "revocation_endpoint",
    ):
        assert meta[endpoint].startswith(live_server)

    # An unauthenticated MCP request points at that metadata.
    unauthenticated = await http.post("/mcp", json=MCP_INITIALIZE)
    assert unauthenticated.status_code == 401
    assert "oauth-protected-resource/mcp" in unauthenticated.headers["www-authenticate"]

    # Dynamic registration, then /authorize with PKCE S256 and the MCP resource, then consent.
    client = await register_client(http)
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(8)
    page = await open_consent(http, client, challenge, state, mcp_url)
    assert "E2E App" in page.text and "https://app.example/" in page.text
    assert 'type="password"' in page.text and 'name="api_key"' in page.text
    granted = await submit(http, hidden_request(page), "grant", ws.api_key)
    params = redirect_params(granted)
    assert params["state"] == state and params["code"].startswith("oac_")

    # Token endpoint with the verifier.
    response = await exchange(http, client, params["code"], verifier)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    tokens = response.json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] > 0
    assert tokens["access_token"].startswith("oat_") and tokens["refresh_token"].startswith("ort_")

    # The access token works on /mcp ...
    me = await get_me(mcp_session, tokens["access_token"])
    assert me["auth"] == "oauth" and me["workspace"]["id"] == ws.workspace_id
    assert me["user"]["id"] == ws.user_id
    # ... but not on the REST API (OAuth tokens are for /mcp only).
    rest = await http.get("/api/v1/me", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert rest.status_code == 401

    # Refresh (rotation) gives a working pair; the old refresh token is refused.
    refreshed = await token_request(
        http, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client["client_id"]
    )
    assert refreshed.status_code == 200, refreshed.text
    new = refreshed.json()
    assert new["refresh_token"] != tokens["refresh_token"]
    me = await get_me(mcp_session, new["access_token"])
    assert me["auth"] == "oauth" and me["workspace"]["id"] == ws.workspace_id
    again = await token_request(
        http, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client["client_id"]
    )
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"

    # The app is listed under connected apps ...
    listed = await http.get("/api/v1/connected-apps", headers={"Authorization": f"Bearer {ws.api_key}"})
    assert listed.status_code == 200
    [app] = [a for a in listed.json() if a["name"] == "E2E App"]
    assert app["mine"] is True and app["uri"] == "https://app.example/" and app["user"]["id"] == ws.user_id
    assert app["lastUsedAt"] is not None

    # ... and disconnecting it cuts off every token at once.
    disconnected = await http.post(
        f"{live_server}/api/v1/connected-apps/{app['id']}/disconnect",
        headers={"Authorization": f"Bearer {ws.api_key}"},
    )
    assert disconnected.status_code == 200 and disconnected.json() == {"ok": True}
    refused = await mcp_status(http, new["access_token"])
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer")
    after = await token_request(
        http, grant_type="refresh_token", refresh_token=new["refresh_token"], client_id=client["client_id"]
    )
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant"
    listed = await http.get("/api/v1/connected-apps", headers={"Authorization": f"Bearer {ws.api_key}"})
    assert app["id"] not in [a["id"] for a in listed.json()]


# --- refusals -----------------------------------------------------------------------------------------------


async def test_wrong_code_verifier_is_refused(
    http: httpx.AsyncClient, live_server: str, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client = await register_client(http, token_endpoint_auth_method="client_secret_post")
    assert client["client_secret"]
    verifier, challenge = pkce_pair()
    code = await obtain_code(http, client, ws.api_key, challenge, f"{live_server}/mcp")

    wrong = await exchange(http, client, code, pkce_pair()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    no_secret = await token_request(
        http,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT_URI,
        client_id=client["client_id"],
        code_verifier=verifier,
    )
    assert no_secret.status_code == 401 and no_secret.json()["error"] == "invalid_client"
    # The right verifier (and secret) still works: a failed PKCE check does not spend the code.
    right = await exchange(http, client, code, verifier)
    assert right.status_code == 200, right.text


async def test_replayed_code_is_refused_and_revokes_its_tokens(
    http: httpx.AsyncClient, live_server: str, make_workspace: MakeWorkspace, mcp_session: McpSession
) -> None:
    ws = await make_workspace()
    client = await register_client(http)
    verifier, challenge = pkce_pair()
    code = await obtain_code(http, client, ws.api_key, challenge, f"{live_server}/mcp")
    first = await exchange(http, client, code, verifier)
    assert first.status_code == 200
    tokens = first.json()
    assert (await get_me(mcp_session, tokens["access_token"]))["auth"] == "oauth"

    replay = await exchange(http, client, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    # RFC 6749 §4.1.2: a replayed code revokes the tokens issued for it.
    assert (await mcp_status(http, tokens["access_token"])).status_code == 401
    refresh = await token_request(
        http, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client["client_id"]
    )
    assert refresh.status_code == 400


async def test_revoked_access_token_is_refused_on_mcp(
    http: httpx.AsyncClient, live_server: str, make_workspace: MakeWorkspace, mcp_session: McpSession
) -> None:
    ws = await make_workspace()
    client = await register_client(http, token_endpoint_auth_method="client_secret_post")
    verifier, challenge = pkce_pair()
    code = await obtain_code(http, client, ws.api_key, challenge, None)  # no resource: bound to /mcp anyway
    tokens = (await exchange(http, client, code, verifier)).json()
    assert (await get_me(mcp_session, tokens["access_token"]))["auth"] == "oauth"
    revocation_endpoint = (await metadata(http))["revocation_endpoint"]

    # Another client cannot revoke this client's token (RFC 7009 answers 200 and does nothing).
    other = await register_client(http, "Other App")
    foreign = await http.post(
        revocation_endpoint,
        data={"token": tokens["access_token"], "client_id": other["client_id"], "client_secret": ""},
    )
    assert foreign.status_code == 200
    assert (await get_me(mcp_session, tokens["access_token"]))["auth"] == "oauth"

    revoked = await http.post(
        revocation_endpoint,
        data={"token": tokens["access_token"], "client_id": client["client_id"], **_secret(client)},
    )
    assert revoked.status_code == 200
    assert (await mcp_status(http, tokens["access_token"])).status_code == 401
    refresh = await token_request(
        http,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=client["client_id"],
        **_secret(client),
    )
    assert refresh.status_code == 400  # the whole grant's tokens were revoked
    # The connection itself stays listed.
    listed = await http.get("/api/v1/connected-apps", headers={"Authorization": f"Bearer {ws.api_key}"})
    assert "E2E App" in [a["name"] for a in listed.json()]


async def test_api_key_is_accepted_on_mcp(make_workspace: MakeWorkspace, mcp_session: McpSession) -> None:
    ws = await make_workspace()
    me = await get_me(mcp_session, ws.api_key)
    assert me["auth"] == "api_key" and me["workspace"]["id"] == ws.workspace_id


async def test_other_resource_is_refused_at_authorize(http: httpx.AsyncClient) -> None:
    client = await register_client(http)
    _, challenge = pkce_pair()
    meta = await metadata(http)
    response = await http.get(
        meta["authorization_endpoint"],
        params={
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT_URI,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s1",
            "resource": "https://elsewhere.example/mcp",
        },
    )
    params = redirect_params(response)
    assert params["error"] == "invalid_target" and params["state"] == "s1"


async def test_registration_refuses_non_loopback_http_redirect(http: httpx.AsyncClient) -> None:
    meta = await metadata(http)
    response = await http.post(
        meta["registration_endpoint"], json={"redirect_uris": ["http://evil.example/cb"]}
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"


# --- the consent page ---------------------------------------------------------------------------------------


async def test_deny_redirects_with_access_denied(http: httpx.AsyncClient, live_server: str) -> None:
    client = await register_client(http)
    _, challenge = pkce_pair()
    page = await open_consent(http, client, challenge, "deny-state", f"{live_server}/mcp")
    denied = await submit(http, hidden_request(page), "deny")
    params = redirect_params(denied)
    assert params["error"] == "access_denied" and params["state"] == "deny-state"
    assert "code" not in params
    assert denied.headers["cache-control"] == "no-store"


async def test_consent_page_is_escaped_and_cannot_be_framed(
    http: httpx.AsyncClient, live_server: str
) -> None:
    client = await register_client(http, name='<script>alert("x")</script>')
    _, challenge = pkce_pair()
    page = await open_consent(http, client, challenge, "s", None)
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text
    assert page.headers["x-frame-options"] == "DENY"
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
    assert "form-action 'self' http://127.0.0.1:9" in csp
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["content-type"].startswith("text/html")
    assert "<script" not in page.text.replace("&lt;script", "")  # no JavaScript at all
    assert 'value="deny"' in page.text and 'value="grant"' in page.text


async def test_invalid_key_shows_the_form_again(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client = await register_client(http)
    _, challenge = pkce_pair()
    signed = hidden_request(await open_consent(http, client, challenge, "s", None))

    for bad_key in ("osk_" + "x" * 43, "", "nonsense"):
        response = await submit(http, signed, "grant", bad_key)
        assert response.status_code == 401
        assert "API key" in response.text and 'name="api_key"' in response.text
        assert bad_key not in response.text or bad_key == ""  # the key is never echoed
        assert response.headers["x-frame-options"] == "DENY"
    # Then the right key completes the flow.
    assert "code" in redirect_params(await submit(http, signed, "grant", ws.api_key))


async def test_tampered_or_expired_request_gets_400(
    http: httpx.AsyncClient, runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client = await register_client(http)
    _, challenge = pkce_pair()
    signed = hidden_request(await open_consent(http, client, challenge, "s", None))
    body, mac = signed.split(".")
    tampered = f"{body[:-2]}{'A' if body[-2] != 'A' else 'B'}{body[-1]}.{mac}"
    secret = runtime.settings.resolved_secret_key()
    payload = {
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT_URI,
        "redirect_uri_explicit": True,
        "code_challenge": challenge,
        "state": "s",
        "scopes": [],
        "resource": runtime.settings.mcp_resource_url,
    }
    expired = sign(secret, CONSENT_PURPOSE, payload, runtime.ports.clock.now() - timedelta(seconds=1))
    wrong_purpose = sign(secret, "unsubscribe", payload, runtime.ports.clock.now() + timedelta(minutes=5))

    for bad, message in (
        (tampered, "invalid"),
        (expired, "expired"),
        (wrong_purpose, "invalid"),
        ("", "invalid"),
    ):
        shown = await http.get(f"/oauth/consent?{urlencode({'request': bad})}")
        assert shown.status_code == 400 and message in shown.text
        posted = await submit(http, bad, "grant", ws.api_key)
        assert posted.status_code == 400 and "location" not in posted.headers
        denied = await submit(http, bad, "deny")
        assert denied.status_code == 400 and "location" not in denied.headers  # never an open redirect
    missing = await http.post("/oauth/consent", data={"decision": "deny"})
    assert missing.status_code == 400


@pytest.mark.parametrize("decision", ["", "maybe"])
async def test_unknown_decision_is_refused(http: httpx.AsyncClient, decision: str) -> None:
    client = await register_client(http)
    _, challenge = pkce_pair()
    signed = hidden_request(await open_consent(http, client, challenge, "s", None))
    response = await submit(http, signed, decision)
    assert response.status_code == 400 and "location" not in response.headers


async def test_consent_post_from_another_site_is_refused(
    http: httpx.AsyncClient, live_server: str, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client = await register_client(http)
    _, challenge = pkce_pair()
    signed = hidden_request(await open_consent(http, client, challenge, "s", None))
    form = {"request": signed, "api_key": ws.api_key, "decision": "grant"}
    foreign = await http.post("/oauth/consent", data=form, headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403 and "location" not in foreign.headers
    same_site = await http.post("/oauth/consent", data=form, headers={"Origin": live_server})
    assert "code" in redirect_params(same_site)


async def test_connected_app_tools_over_mcp(
    http: httpx.AsyncClient, live_server: str, make_workspace: MakeWorkspace, mcp_session: McpSession
) -> None:
    ws = await make_workspace()
    client = await register_client(http, "Tool App")
    verifier, challenge = pkce_pair()
    code = await obtain_code(http, client, ws.api_key, challenge, f"{live_server}/mcp")
    tokens = (await exchange(http, client, code, verifier)).json()

    async with mcp_session(tokens["access_token"]) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        list_hints, disconnect_hints = (
            tools["list_connected_apps"].annotations,
            tools["disconnect_app"].annotations,
        )
        assert list_hints is not None and list_hints.read_only_hint is True
        assert disconnect_hints is not None and disconnect_hints.destructive_hint is True
        listed = await mcp.call_tool("list_connected_apps", {})
        assert not listed.is_error
        [app] = listed.structured_content["result"]
        assert app["name"] == "Tool App" and app["mine"] is True
        rest = await http.get("/api/v1/connected-apps", headers={"Authorization": f"Bearer {ws.api_key}"})
        assert rest.json() == [{**app, "lastUsedAt": rest.json()[0]["lastUsedAt"]}]  # same JSON as REST
        # The app disconnects itself (a client that cannot elicit confirms explicitly).
        done = await mcp.call_tool("disconnect_app", {"id": app["id"], "confirm": True})
        assert not done.is_error and done.structured_content == {"ok": True}
    assert (await mcp_status(http, tokens["access_token"])).status_code == 401
