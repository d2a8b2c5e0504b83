"""The one place that says what a mailbox logs in with (`login_for`): its password, or for a Google or
Microsoft mailbox connected over OAuth a fresh access token (refreshed `OUTREACH_OAUTH_REFRESH_AHEAD_S`
before it expires) and SASL XOAUTH2. Every login goes through it: the sender's SMTP hand-off, the inbox
worker's IMAP, a thread reply's SMTP and IMAP, warmup, retests. The token endpoint is reached through the
OAuth port (`ports.OAuthClient`; authlib's client in `outreach_app/adapters/oauth.py`).

The grant's tokens are stored in `mailboxes.oauth_encrypted` as one JSON document encrypted with their own
purpose (`OAUTH_TOKENS`). An access token refreshed by this process is kept in memory for the rest of its
life; a refresh token the provider rotated is written back by the `usage` worker (`keep_rotated_tokens`);
see docs/mailboxes.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import structlog

from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.crypto import UndecryptableSecret, decrypt, encrypt
from outreach_core.kernel.db.tables import mailboxes
from outreach_core.kernel.ports import MailServer, OAuthClient, OAuthRefused, OAuthUnavailable, Ports
from outreach_core.kernel.settings import Settings
from outreach_core.mailboxes.oauth_providers import OAUTH_PROVIDERS, OAuthProvider, provider_config

OAUTH_TOKENS = b"outreach mailbox oauth tokens v1"
_log = structlog.get_logger()


class LoginUnavailable(Exception):
    """No credential to log in with. `revoked`: the mailbox must be connected again (its grant was revoked
    or its stored secret cannot be decrypted): status `error`; otherwise the provider could not be reached
    and the login is tried again later. `reason` is a short phrase without secrets."""

    def __init__(self, reason: str, *, revoked: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.revoked = revoked


@dataclass(frozen=True)
class Tokens:
    provider: OAuthProvider
    refresh_token: str
    access_token: str
    expires_at: float  # unix seconds


_rotated: dict[str, tuple[str, Tokens]] = {}
"""Mailboxes whose provider rotated the refresh token in this process: mailbox id -> (the stored refresh
token they descend from, the new tokens), until `keep_rotated_tokens` writes them back."""

_fresh: dict[tuple[str, str], Tokens] = {}
"""Tokens this process refreshed, by mailbox id and the stored refresh token they descend from (a mailbox
connected again has a new one, so nothing of its old grant is used)."""


def oauth_client(ports: Ports) -> OAuthClient:
    """The OAuth port (`Ports.oauth`); a runtime without one cannot connect or refresh OAuth mailboxes."""
    if ports.oauth is None:
        raise RuntimeError("no OAuth client adapter is configured (Ports.oauth)")
    return ports.oauth


def seal_tokens(settings: Settings, tokens: Tokens) -> str:
    document = {
        "provider": tokens.provider,
        "refresh": tokens.refresh_token,
        "access": tokens.access_token,
        "expires": tokens.expires_at,
    }
    return encrypt(settings, json.dumps(document), OAUTH_TOKENS)


def open_tokens(settings: Settings, sealed: str) -> Tokens:
    document = json.loads(decrypt(settings, sealed, OAUTH_TOKENS))
    provider = document["provider"]
    assert provider in OAUTH_PROVIDERS
    return Tokens(provider, document["refresh"], document["access"], float(document["expires"]))


def tokens_from_response(
    provider: OAuthProvider, token: dict[str, Any], now_s: float, previous: str
) -> Tokens:
    """Tokens from a token endpoint's answer (`previous`: the refresh token to keep when none is sent)."""
    expires_in = token.get("expires_in")
    lifetime = float(expires_in) if isinstance(expires_in, int | float | str) and str(expires_in) else 3600.0
    refresh = token.get("refresh_token") or previous
    return Tokens(provider, str(refresh), str(token["access_token"]), now_s + lifetime)


async def login_for(
    settings: Settings,
    oauth: OAuthClient | None,
    now: datetime,
    mailbox_id: str,
    server: MailServer,
    password_encrypted: str,
    oauth_encrypted: str | None,
) -> tuple[MailServer, str]:
    """The server to log in to and the secret to log in with: the decrypted password, or for an OAuth
    mailbox (`oauth_encrypted` set) the server with `auth="xoauth2"` and an access token valid for a few
    more minutes (refreshed first when needed, through `oauth`, the OAuth port). Raises `LoginUnavailable`
    (revoked or not), and `UndecryptableSecret` for a password no configured key decrypts."""
    if oauth_encrypted is None:
        return server, decrypt(settings, password_encrypted)
    try:
        stored = open_tokens(settings, oauth_encrypted)
    except UndecryptableSecret:
        raise LoginUnavailable(
            "the stored OAuth tokens cannot be decrypted with the server's secret keys; "
            "reconnect the mailbox",
            revoked=True,
        ) from None
    key = (mailbox_id, stored.refresh_token)
    tokens = _fresh.get(key) or stored
    server = replace(server, auth="xoauth2")
    now_s = now.timestamp()
    if tokens.expires_at - settings.oauth_refresh_ahead_s > now_s:
        return server, tokens.access_token
    if oauth is None:
        raise RuntimeError("no OAuth client adapter is configured (Ports.oauth): tokens cannot be refreshed")
    tokens = await refresh(settings, oauth, tokens, now_s)
    _fresh[key] = tokens
    if tokens.refresh_token != stored.refresh_token:
        _rotated[mailbox_id] = (stored.refresh_token, tokens)
    return server, tokens.access_token


async def refresh(settings: Settings, oauth: OAuthClient, tokens: Tokens, now_s: float) -> Tokens:
    """New tokens from the provider's token endpoint (grant refresh_token)."""
    config = provider_config(settings, tokens.provider)
    if config is None:
        raise LoginUnavailable(
            f"{tokens.provider} OAuth is no longer configured on this server (its client id and secret)",
            revoked=False,
        )
    try:
        answer = await oauth.refresh(config, refresh_token=tokens.refresh_token)
    except OAuthRefused as exc:
        if exc.error in ("invalid_grant", "invalid_client", "unauthorized_client"):
            raise LoginUnavailable(
                f"the provider refused the mailbox's OAuth grant ({exc.error}): it was revoked or expired; "
                "reconnect the mailbox (POST /mailboxes/oauth/start)",
                revoked=True,
            ) from None
        raise LoginUnavailable(
            f"the access token could not be refreshed ({exc.error})", revoked=False
        ) from None
    except OAuthUnavailable as exc:  # transport errors, 5xx, unreadable answers: passing
        _log.info("oauth_refresh_unavailable", provider=tokens.provider, error=exc.kind, status=exc.status)
        said = f"the provider answered {exc.status}" if exc.status else "no usable answer from the provider"
        raise LoginUnavailable(
            f"the access token could not be refreshed: {said}; tried again later", revoked=False
        ) from None
    if "access_token" not in answer:
        raise LoginUnavailable("the provider's token answer had no access token", revoked=False)
    return tokens_from_response(tokens.provider, answer, now_s, tokens.refresh_token)


def rotated_pending() -> int:
    """How many rotated refresh tokens wait to be written back."""
    return len(_rotated)


async def keep_rotated_tokens(ctx: SystemContext) -> int:
    """Write back the tokens of mailboxes whose provider rotated the refresh token in this process
    (Microsoft does), so that a restart or another process uses the newest; a mailbox connected again
    meanwhile (its stored refresh token is no longer the one they descend from) keeps its new grant. The
    `usage` worker calls it every few seconds in every process. Returns how many were written."""
    written = 0
    for mailbox_id, (descends_from, tokens) in list(_rotated.items()):
        boxes = system_scope(mailboxes)
        row = (
            await ctx.conn.execute(
                boxes.select(mailboxes.c.oauth_encrypted).where(mailboxes.c.id == mailbox_id)
            )
        ).one_or_none()
        _rotated.pop(mailbox_id, None)
        if row is None or row.oauth_encrypted is None:
            continue
        try:
            stored = open_tokens(ctx.settings, row.oauth_encrypted)
        except UndecryptableSecret:
            continue
        if stored.refresh_token != descends_from:
            continue
        sealed = seal_tokens(ctx.settings, tokens)
        await ctx.conn.execute(
            boxes.update().where(mailboxes.c.id == mailbox_id).values(oauth_encrypted=sealed)
        )
        written += 1
    return written
