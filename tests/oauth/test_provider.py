"""The SDK provider: authorize redirects to the signed consent page, bearer checks, error mapping."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError, RegistrationError, TokenError
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from mcp_server.consent import read_consent_request
from mcp_server.oauth_provider import OutreachOAuthProvider
from outreach_app.asgi import build_app
from outreach_core.kernel.context import Principal
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.signing import SignatureExpired
from outreach_core.oauth import server as core
from tests.conftest import MakeWorkspace, serving
from tests.oauth.helpers import REDIRECT_URI, connect, issue_code, pkce_pair, register


def params(challenge: str, resource: str | None, state: str | None = "st-1") -> AuthorizationParams:
    return AuthorizationParams(
        state=state,
        scopes=None,
        code_challenge=challenge,
        redirect_uri=AnyUrl(REDIRECT_URI),
        redirect_uri_provided_explicitly=True,
        resource=resource,
    )


async def client(provider: OutreachOAuthProvider, runtime: Runtime) -> OAuthClientInformationFull:
    found = await provider.get_client(await register(runtime))
    assert found is not None
    return found


async def test_authorize_sends_to_the_signed_consent_page_without_issuing_a_code(runtime: Runtime) -> None:
    provider = OutreachOAuthProvider(runtime)
    app = await client(provider, runtime)
    _, challenge = pkce_pair()
    for resource in (runtime.settings.mcp_resource_url, runtime.settings.mcp_resource_url + "/", None):
        url = await provider.authorize(app, params(challenge, resource))
        parts = urlsplit(url)
        assert (
            f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{runtime.settings.public_url}/oauth/consent"
        )
        signed = parse_qs(parts.query)["request"][0]
        request = read_consent_request(
            runtime.settings.resolved_secret_key(), signed, runtime.ports.clock.now()
        )
        assert request.client_id == app.client_id
        assert (request.redirect_uri, request.code_challenge, request.state) == (
            REDIRECT_URI,
            challenge,
            "st-1",
        )
        assert request.resource == runtime.settings.mcp_resource_url  # tokens are always bound to /mcp
        with pytest.raises(SignatureExpired):
            read_consent_request(
                runtime.settings.resolved_secret_key(),
                signed,
                runtime.ports.clock.now() + timedelta(minutes=10),
            )


async def test_authorize_refuses_another_resource_and_bad_requests(runtime: Runtime) -> None:
    provider = OutreachOAuthProvider(runtime)
    app = await client(provider, runtime)
    _, challenge = pkce_pair()
    with pytest.raises(AuthorizeError) as refused:
        await provider.authorize(app, params(challenge, "https://other.example/mcp"))
    assert refused.value.error == "invalid_target"
    with pytest.raises(AuthorizeError) as refused:
        await provider.authorize(app, params(challenge, f"{runtime.settings.public_url}/api/v1"))
    assert refused.value.error == "invalid_target"
    with pytest.raises(AuthorizeError) as refused:
        await provider.authorize(app, params("plain-not-s256", None))
    assert refused.value.error == "invalid_request"
    with pytest.raises(AuthorizeError) as refused:
        await provider.authorize(app, params(challenge, None, state="s" * 2001))
    assert refused.value.error == "invalid_request"


async def test_load_access_token_accepts_oauth_tokens_and_api_keys(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    provider = OutreachOAuthProvider(runtime)
    ws = await make_workspace()
    client_id = await register(runtime)
    tokens = await connect(runtime, ws.api_key, client_id)

    oauth = await provider.load_access_token(tokens.access_token)
    assert oauth is not None and oauth.client_id == client_id
    assert oauth.resource == runtime.settings.mcp_resource_url and oauth.subject == ws.user_id
    assert oauth.claims is not None
    principal = Principal(**oauth.claims["principal"])
    assert principal == Principal(
        user_id=ws.user_id,
        workspace_id=ws.workspace_id,
        role="owner",
        auth="oauth",
        credential_id=tokens.grant_id,
        client_id=client_id,
    )

    key = await provider.load_access_token(ws.api_key)
    assert key is not None and key.client_id == "api_key" and key.expires_at is None
    assert key.claims is not None and Principal(**key.claims["principal"]) == await ws.principal()

    for refused in (tokens.refresh_token, "oat_unknown", "osk_" + "x" * 43, ""):
        assert await provider.load_access_token(refused) is None


async def test_codes_and_refresh_tokens_map_to_sdk_models_and_errors(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    provider = OutreachOAuthProvider(runtime)
    ws = await make_workspace()
    app = await client(provider, runtime)
    _, challenge = pkce_pair()
    code = await issue_code(runtime, ws.api_key, app.client_id, challenge)

    loaded = await provider.load_authorization_code(app, code)
    assert loaded is not None
    assert (loaded.code_challenge, str(loaded.redirect_uri), loaded.subject) == (
        challenge,
        REDIRECT_URI,
        ws.user_id,
    )
    token = await provider.exchange_authorization_code(app, loaded)
    assert token.token_type == "Bearer" and token.expires_in == runtime.settings.oauth_access_ttl_s
    assert token.refresh_token is not None
    with pytest.raises(TokenError) as refused:
        await provider.exchange_authorization_code(app, loaded)  # spent
    assert refused.value.error == "invalid_grant"
    # Presenting the spent code again is a replay: the tokens it gave are revoked.
    assert await provider.load_authorization_code(app, code) is None
    assert await provider.load_access_token(token.access_token) is None

    second = await provider.load_authorization_code(app, await issue_code(runtime, ws.api_key, app.client_id))
    assert second is not None
    fresh = await provider.exchange_authorization_code(app, second)
    assert fresh.refresh_token is not None
    refresh = await provider.load_refresh_token(app, fresh.refresh_token)
    assert refresh is not None and refresh.resource == runtime.settings.mcp_resource_url
    rotated = await provider.exchange_refresh_token(app, refresh, [])
    assert rotated.access_token != fresh.access_token
    with pytest.raises(TokenError) as refused:
        await provider.exchange_refresh_token(app, refresh, [])
    assert refused.value.error == "invalid_grant"

    await provider.revoke_token(refresh)  # revokes the whole grant's tokens
    assert await provider.load_access_token(rotated.access_token) is None
    assert (
        await runtime.system_read(core.load_refresh_token, app.client_id, str(rotated.refresh_token)) is None
    )


async def test_registration_errors_are_mapped(runtime: Runtime) -> None:
    provider = OutreachOAuthProvider(runtime)
    bad_redirect = OAuthClientInformationFull(
        client_id="c-bad-redirect", redirect_uris=[AnyUrl("http://evil.example/")]
    )
    with pytest.raises(RegistrationError) as refused:
        await provider.register_client(bad_redirect)
    assert refused.value.error == "invalid_redirect_uri"
    long_name = OAuthClientInformationFull(
        client_id="c-long-name", redirect_uris=[AnyUrl(REDIRECT_URI)], client_name="n" * 300
    )
    with pytest.raises(RegistrationError) as refused:
        await provider.register_client(long_name)
    assert refused.value.error == "invalid_client_metadata"


async def test_a_consent_page_opened_before_a_key_rotation_still_works(runtime: Runtime) -> None:
    provider = OutreachOAuthProvider(runtime)
    app = await client(provider, runtime)
    _, challenge = pkce_pair()
    url = urlsplit(await provider.authorize(app, params(challenge, None)))
    key_a = runtime.settings.resolved_secret_key()

    async def show(previous: str | None) -> httpx.Response:
        rotated = runtime.settings.model_copy(update={"secret_key": "key-b", "secret_key_previous": previous})
        served = build_app(Runtime(rotated, engine=runtime.engine), flush_usage=False)
        async with serving(served) as base, httpx.AsyncClient(base_url=base) as http:
            return await http.get(f"{url.path}?{url.query}")

    assert (await show(None)).status_code == 400
    page = await show(key_a)
    assert page.status_code == 200 and 'name="api_key"' in page.text
