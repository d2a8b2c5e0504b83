"""The MCP SDK's OAuth authorization-server provider, backed by the core (`outreach_core.oauth`).

The SDK's routes speak the protocol (metadata, dynamic registration, `/authorize`, `/token`, `/revoke`)
and call this provider; the provider only translates between the SDK's models and the core, through the
runtime (one transaction per call, no SQL here). `/authorize` never issues a code itself: it sends the
browser to our consent page (`mcp_server.consent`), where the person confirms with an API key.

Bearer credentials on `/mcp` come through `load_access_token`, which accepts OAuth access tokens issued
for this MCP endpoint and workspace API keys alike, and carries the caller's `Principal` in the claims.
"""

from __future__ import annotations

import dataclasses
import logging

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    RegistrationErrorCode,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl, ValidationError

from mcp_server.consent import ConsentRequest, consent_url
from outreach_core.auth.authenticate import authenticate_bearer
from outreach_core.kernel.errors import InvalidInput, Unauthorized
from outreach_core.kernel.runtime import Runtime
from outreach_core.oauth import server as core
from outreach_core.oauth.schemas import IssuedTokens

log = logging.getLogger("outreach.oauth")

API_KEY_CLIENT_ID = "api_key"
"""`AccessToken.client_id` for a workspace API key used as a bearer token on /mcp."""
MAX_STATE_LENGTH = 2000


class OutreachAuthorizationCode(AuthorizationCode):
    grant_id: str


class OutreachRefreshToken(RefreshToken):
    grant_id: str


class OutreachOAuthProvider(
    OAuthAuthorizationServerProvider[OutreachAuthorizationCode, OutreachRefreshToken, AccessToken]
):
    """OAuth 2.1 authorization server for MCP clients, storing everything through the core."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.settings = runtime.settings
        self._secret = runtime.settings.resolved_secret_key()

    # --- clients ------------------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The registered client, or None."""
        info = await self.runtime.system_read(core.get_client, client_id)
        return OAuthClientInformationFull.model_validate(info) if info is not None else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Store a dynamically registered client; unacceptable metadata raises `RegistrationError`."""
        try:
            info = client_info.model_dump(mode="json", exclude_none=True)
            await self.runtime.system(core.register_client, info)
        except InvalidInput as exc:
            fields = exc.details.get("fields") or [{}]
            path = str(fields[0].get("path", ""))
            error: RegistrationErrorCode = (
                "invalid_redirect_uri" if path.startswith("redirect_uri") else "invalid_client_metadata"
            )
            raise RegistrationError(error, f"{path}: {exc.message}" if path else exc.message) from exc

    # --- authorization ------------------------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """Send the browser to the consent page with the validated request signed; no code is issued here."""
        resource = self.settings.mcp_resource_url
        if params.resource is not None and not _same_resource(params.resource, resource):
            raise AuthorizeError("invalid_target", f"This server issues tokens only for {resource}.")
        try:
            core.check_code_challenge(params.code_challenge)
        except InvalidInput as exc:
            raise AuthorizeError("invalid_request", f"code_challenge {exc.message}") from exc
        if params.state is not None and len(params.state) > MAX_STATE_LENGTH:
            raise AuthorizeError("invalid_request", f"state must be at most {MAX_STATE_LENGTH} characters")
        request = ConsentRequest(
            client_id=client.client_id,
            redirect_uri=str(params.redirect_uri),
            redirect_uri_explicit=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            state=params.state,
            scopes=list(params.scopes or []),
            resource=resource,
        )
        return consent_url(self.settings, self._secret, request, self.runtime.ports.clock.now())

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> OutreachAuthorizationCode | None:
        """The code if usable by `client`. A replayed (already spent) code revokes its grant's tokens."""
        client_id = client.client_id
        record = await self.runtime.system_read(core.load_authorization_code, client_id, authorization_code)
        if record is None:
            if await self.runtime.system(core.detect_code_replay, client_id, authorization_code):
                log.warning(
                    "oauth: authorization code replayed; tokens of its grant revoked",
                    extra={"client_id": client.client_id},
                )
            return None
        return OutreachAuthorizationCode(
            code=authorization_code,
            scopes=record.scopes,
            expires_at=record.expires_at.timestamp(),
            client_id=record.client_id,
            code_challenge=record.code_challenge,
            redirect_uri=AnyUrl(record.redirect_uri),
            redirect_uri_provided_explicitly=record.redirect_uri_explicit,
            resource=record.resource,
            subject=record.user_id,
            grant_id=record.grant_id,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: OutreachAuthorizationCode
    ) -> OAuthToken:
        """Spend the code (once) for an access/refresh pair."""
        try:
            issued = await self.runtime.system(
                core.exchange_authorization_code, client.client_id, authorization_code.code
            )
        except core.InvalidGrant as exc:
            raise TokenError("invalid_grant", exc.message) from exc
        return _oauth_token(issued)

    # --- refresh ------------------------------------------------------------------------------------------

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> OutreachRefreshToken | None:
        """The refresh token if usable by `client`. Reuse of a rotated token revokes its grant's tokens."""
        record = await self.runtime.system_read(core.load_refresh_token, client.client_id, refresh_token)
        if record is None:
            if await self.runtime.system(core.detect_refresh_token_reuse, client.client_id, refresh_token):
                log.warning(
                    "oauth: rotated refresh token reused; tokens of its grant revoked",
                    extra={"client_id": client.client_id},
                )
            return None
        return OutreachRefreshToken(
            token=refresh_token,
            client_id=record.client_id,
            scopes=record.scopes,
            expires_at=int(record.expires_at.timestamp()),
            resource=record.resource,
            subject=record.user_id,
            grant_id=record.grant_id,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: OutreachRefreshToken, scopes: list[str]
    ) -> OAuthToken:
        """Rotate: the refresh token is spent and a new access/refresh pair issued."""
        try:
            issued = await self.runtime.system(
                core.exchange_refresh_token, client.client_id, refresh_token.token, scopes
            )
        except core.InvalidGrant as exc:
            raise TokenError("invalid_grant", exc.message) from exc
        return _oauth_token(issued)

    # --- bearer tokens ------------------------------------------------------------------------------------

    async def load_access_token(self, token: str) -> AccessToken | None:
        """An OAuth access token issued for /mcp, or a workspace API key; None for anything else."""
        resource = self.settings.mcp_resource_url
        try:
            principal = await self.runtime.system_read(authenticate_bearer, token, oauth_resource=resource)
        except Unauthorized:
            return None
        return AccessToken(
            token=token,
            client_id=principal.client_id or API_KEY_CLIENT_ID,
            scopes=list(principal.scopes),
            expires_at=None,
            resource=resource,
            subject=principal.user_id,
            claims={"principal": dataclasses.asdict(principal)},
        )

    async def revoke_token(self, token: AccessToken | OutreachRefreshToken) -> None:
        """Revoke every token of the grant `token` belongs to (the connection itself stays)."""
        await self.runtime.system(core.revoke_token, token.token)


def _oauth_token(issued: IssuedTokens) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        token_type="Bearer",
        expires_in=issued.expires_in,
        scope=" ".join(issued.scopes) or None,
        refresh_token=issued.refresh_token,
    )


def _same_resource(given: str, ours: str) -> bool:
    """RFC 8707 resource comparison as URLs (case of scheme/host and a trailing slash do not matter)."""
    try:
        return str(AnyHttpUrl(given)).removesuffix("/") == str(AnyHttpUrl(ours)).removesuffix("/")
    except ValidationError:
        return False
