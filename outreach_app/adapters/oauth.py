"""`AuthlibOAuthClient` (`ports.OAuthClient`): the OAuth authorization-code flow and refreshes of Google and
Microsoft mailboxes (issue 32 item 3, docs/mailboxes.md "OAuth") with authlib's `AsyncOAuth2Client`, the
design card's client. One client per request (each carries its own app's credentials); the TLS context of
the token endpoints is built once per CA file."""

from __future__ import annotations

import ssl
from functools import lru_cache
from typing import Any

from authlib.integrations.httpx_client import AsyncOAuth2Client, OAuthError

from outreach_core.kernel.ports import OAuthApp, OAuthRefused, OAuthUnavailable
from outreach_core.kernel.settings import Settings


@lru_cache(maxsize=4)
def token_endpoint_tls(ca_file: str | None) -> ssl.SSLContext:
    """One TLS context for the token endpoints (the system's CAs, plus `OUTREACH_TLS_CA_FILE`'s): building
    one per request (httpx's default) costs ~30 ms of CPU, most of a refresh."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


class AuthlibOAuthClient:
    """`ports.OAuthClient` over authlib (`client_secret_post`, PKCE S256)."""

    def __init__(self, *, timeout_s: float, tls_ca_file: str | None = None) -> None:
        self.timeout_s = timeout_s
        self.tls_ca_file = tls_ca_file

    @classmethod
    def from_settings(cls, settings: Settings) -> AuthlibOAuthClient:
        return cls(timeout_s=settings.oauth_http_timeout_s, tls_ca_file=settings.tls_ca_file)

    def _client(self, app: OAuthApp, *, flow: bool) -> AsyncOAuth2Client:
        # a refresh sends neither the scope nor the callback (the grant keeps its scope)
        extra: dict[str, Any] = (
            {"scope": app.scope, "redirect_uri": app.redirect_uri, "code_challenge_method": "S256"}
            if flow
            else {}
        )
        return AsyncOAuth2Client(
            app.client_id,
            app.client_secret,
            token_endpoint_auth_method="client_secret_post",
            timeout=self.timeout_s,
            verify=token_endpoint_tls(self.tls_ca_file),
            **extra,
        )

    def authorization_url(self, app: OAuthApp, *, state: str, code_verifier: str) -> str:
        client = self._client(app, flow=True)
        url, _ = client.create_authorization_url(
            app.authorize_url, state=state, code_verifier=code_verifier, **app.extra
        )
        return str(url)

    async def exchange_code(self, app: OAuthApp, *, code: str, code_verifier: str) -> dict[str, Any]:
        async def call(client: AsyncOAuth2Client) -> Any:
            return await client.fetch_token(app.token_url, code=code, code_verifier=code_verifier)

        return await self._token(app, call, flow=True)

    async def refresh(self, app: OAuthApp, *, refresh_token: str) -> dict[str, Any]:
        async def call(client: AsyncOAuth2Client) -> Any:
            return await client.refresh_token(app.token_url, refresh_token=refresh_token)

        return await self._token(app, call, flow=False)

    async def _token(self, app: OAuthApp, call: Any, *, flow: bool) -> dict[str, Any]:
        try:
            async with self._client(app, flow=flow) as client:
                answer = await call(client)
        except OAuthError as exc:
            raise OAuthRefused(str(exc.error)) from None
        except Exception as exc:  # transport errors, 5xx, unreadable answers: passing
            # authlib speaks through httpx2 when it is installed, else httpx: its exceptions are either's
            status = getattr(getattr(exc, "response", None), "status_code", None)
            raise OAuthUnavailable(type(exc).__name__, status if isinstance(status, int) else None) from None
        if not isinstance(answer, dict):
            raise OAuthUnavailable("unreadable token answer")
        return dict(answer)
