"""The OAuth 2.1 server for MCP clients: registered clients, consent codes, access/refresh tokens, grants.

The HTTP protocol (metadata, registration, /authorize, /token, /revoke) is the MCP SDK's; these functions
are what it stores and checks. A person consents on our page by typing an API key of their workspace; that
creates (or reuses) a *grant* for (workspace, person, client). Codes and tokens hang off the grant, are
stored only as SHA-256 hashes, and stop working the moment the grant is revoked ("disconnect").

System-level functions (no caller yet) take a `SystemContext`; `revoke_member_grants` acts for a caller and
takes a `WorkspaceContext`. The connected-apps operations a person calls are in `operations.py`. None of
them commits: the runtime owns the transaction.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from outreach_core.api_keys.rules import hash_secret
from outreach_core.auth.authenticate import (
    ACCESS_TOKEN_PREFIX,
    REFRESH_TOKEN_PREFIX,
    authenticate_api_key,
    grant_of,
    membership_of_grant,
)
from outreach_core.kernel.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    scoped,
    system_scope,
    unscoped,
)
from outreach_core.kernel.db.tables import members, oauth_clients, oauth_codes, oauth_grants, oauth_tokens
from outreach_core.kernel.errors import BadRequest, InvalidInput, NotFound
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.wire import has_control_characters
from outreach_core.oauth.schemas import (
    AuthorizationCodeRecord,
    IssuedTokens,
    RefreshTokenRecord,
)

CODE_PREFIX = "oac_"
CODE_TTL = timedelta(minutes=5)
REFRESH_REUSE_GRACE = timedelta(seconds=60)
"""A rotated refresh token presented again within this window is refused without alarm (a client that
refreshed twice concurrently); later, it is treated as stolen and the grant's tokens are revoked."""

MAX_URI_LENGTH = 2000
MAX_SCOPE_LENGTH = 500
# Anonymous dynamic registration (docs/oauth.md#registration-rules): what one client may register.
MAX_REDIRECT_URIS = 10
MAX_REGISTERED_URI = 1000
MAX_CLIENT_NAME = 200
MAX_CLIENT_TEXT = 200
MAX_CONTACTS = 5
MAX_CONTACT_LENGTH = 320
MAX_CLIENT_INFO_BYTES = 16_384
_OPTIONAL_URIS = ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri")
UNUSED_CLIENT_TTL = timedelta(days=1)
"""A registered client that never completed a grant (nobody consented) is purged after this long."""
_S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}
_FORBIDDEN_SCHEMES = {"javascript", "data", "file", "vbscript", "blob", "about"}


class InvalidGrant(BadRequest):
    """A code or refresh token that is unknown, expired, used, revoked, or belongs to another client."""

    code = "invalid_grant"


# --- pure checks ------------------------------------------------------------------------------------------


def check_redirect_uri(uri: str) -> str | None:
    """Why `uri` is not acceptable as a redirect URI (None when it is).

    OAuth 2.1: https anywhere, http only on loopback, private-use schemes for native apps (`cursor://...`);
    never a fragment, never a scheme a browser would execute or read locally.
    """
    if len(uri) > MAX_REGISTERED_URI:
        return f"must be at most {MAX_REGISTERED_URI} characters"
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "is not a valid URI"
    scheme = parts.scheme.lower()
    if not scheme:
        return "must be an absolute URI"
    if parts.fragment:
        return "must not contain a fragment"
    if scheme in _FORBIDDEN_SCHEMES:
        return f"must not use the {scheme}: scheme"
    if scheme in ("http", "https") and not parts.hostname:
        return "must name a host"
    if scheme == "http" and parts.hostname not in _LOOPBACK_HOSTS:
        return "may use http only on a loopback address (localhost, 127.0.0.1, [::1]); use https"
    return None


def check_code_challenge(code_challenge: str) -> None:
    """PKCE S256: the challenge is the unpadded base64url SHA-256 of the verifier, exactly 43 characters."""
    if not _S256_CHALLENGE.fullmatch(code_challenge):
        raise InvalidInput.field("code_challenge", "must be a PKCE S256 challenge (43 base64url characters)")


def _join_scopes(scopes: list[str] | None) -> str:
    joined = " ".join(sorted(set(scopes or [])))
    if len(joined) > MAX_SCOPE_LENGTH:
        raise InvalidInput.field("scope", f"the scopes must total at most {MAX_SCOPE_LENGTH} characters")
    return joined


def _split_scopes(scopes: str) -> list[str]:
    return scopes.split() if scopes else []


# --- clients (system) -------------------------------------------------------------------------------------


async def register_client(ctx: SystemContext, info: dict[str, Any]) -> None:
    """Store a dynamically registered client (RFC 7591). `info` is the full client information as JSON.

    Anyone may register, so everything is bounded: refuses, with `invalid_input` naming the field, more
    than 10 redirect URIs, any URI over 1,000 characters, names and software ids over 200 characters,
    control characters in the name, more than 5 contacts, more than 16 KiB in all, and redirect URIs that
    OAuth 2.1 does not permit.
    """
    client_id = info.get("client_id")
    if not isinstance(client_id, str) or not 1 <= len(client_id) <= 64:
        raise InvalidInput.field("client_id", "must be 1 to 64 characters")
    name = info.get("client_name")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_CLIENT_NAME):
        raise InvalidInput.field("client_name", f"must be at most {MAX_CLIENT_NAME} characters")
    if name is not None and has_control_characters(name):
        raise InvalidInput.field("client_name", "must not contain control characters")
    for key in _OPTIONAL_URIS:
        value = info.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > MAX_REGISTERED_URI):
            raise InvalidInput.field(key, f"must be at most {MAX_REGISTERED_URI} characters")
    for key in ("software_id", "software_version"):
        value = info.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > MAX_CLIENT_TEXT):
            raise InvalidInput.field(key, f"must be at most {MAX_CLIENT_TEXT} characters")
    scope = info.get("scope")
    if scope is not None and (not isinstance(scope, str) or len(scope) > MAX_SCOPE_LENGTH):
        raise InvalidInput.field("scope", f"must be at most {MAX_SCOPE_LENGTH} characters")
    contacts = info.get("contacts") or []
    if not isinstance(contacts, list) or len(contacts) > MAX_CONTACTS:
        raise InvalidInput.field("contacts", f"give at most {MAX_CONTACTS} contacts")
    if any(not isinstance(c, str) or len(c) > MAX_CONTACT_LENGTH for c in contacts):
        raise InvalidInput.field("contacts", f"each contact must be at most {MAX_CONTACT_LENGTH} characters")
    redirect_uris = info.get("redirect_uris") or []
    if not isinstance(redirect_uris, list) or not 1 <= len(redirect_uris) <= MAX_REDIRECT_URIS:
        raise InvalidInput.field("redirect_uris", f"give 1 to {MAX_REDIRECT_URIS} redirect URIs")
    for i, redirect_uri in enumerate(redirect_uris):
        problem = check_redirect_uri(redirect_uri) if isinstance(redirect_uri, str) else "must be a string"
        if problem:
            raise InvalidInput.field(f"redirect_uris[{i}]", f"redirect URI {problem}")
    if len(json.dumps(info, separators=(",", ":"))) > MAX_CLIENT_INFO_BYTES:
        raise InvalidInput(f"The client metadata must total at most {MAX_CLIENT_INFO_BYTES} bytes.")
    await ctx.conn.execute(
        unscoped(oauth_clients).insert(
            {
                "id": client_id,
                "name": name or None,
                "uri": info.get("client_uri") or None,
                "info": info,
                "created_at": ctx.now,
            }
        )
    )


async def get_client(ctx: SystemContext, client_id: str) -> dict[str, Any] | None:
    """The registered client information (as stored at registration), or None for an unknown client."""
    c = unscoped(oauth_clients)
    info = (await ctx.conn.execute(c.select(c.c.info).where(c.c.id == client_id))).scalar_one_or_none()
    return dict(info) if info is not None else None


# --- authorization codes (system) -------------------------------------------------------------------------


async def issue_authorization_code(
    ctx: SystemContext,
    *,
    api_key: str,
    client_id: str,
    redirect_uri: str,
    redirect_uri_explicit: bool,
    code_challenge: str,
    scopes: list[str],
    resource: str,
) -> str:
    """The person behind `api_key` consents: grant `client_id` access to their workspace, return a code.

    The code is single-use, expires after five minutes, and is stored hashed with the PKCE challenge, the
    redirect URI and the resource it was requested for. A bad key raises `Unauthorized`.
    """
    principal = await authenticate_api_key(ctx, api_key)
    check_code_challenge(code_challenge)
    joined_scopes = _join_scopes(scopes)
    client = await get_client(ctx, client_id)
    if client is None:
        raise NotFound("OAuth client", client_id)
    if redirect_uri not in (client.get("redirect_uris") or []):
        raise InvalidInput.field("redirect_uri", "is not registered for this client")
    if len(resource) > MAX_URI_LENGTH:
        raise InvalidInput.field("resource", f"must be at most {MAX_URI_LENGTH} characters")
    wctx = as_workspace(ctx, principal)
    grant_id = await _active_grant(wctx, client_id, joined_scopes)
    code = CODE_PREFIX + secrets.token_urlsafe(32)  # 256 bits
    await ctx.conn.execute(
        scoped(wctx, oauth_codes).insert(
            {
                "code_hash": hash_secret(code),
                "grant_id": grant_id,
                "client_id": client_id,
                "redirect_uri": redirect_uri,
                "redirect_uri_explicit": redirect_uri_explicit,
                "code_challenge": code_challenge,
                "scopes": joined_scopes,
                "resource": resource,
                "expires_at": ctx.now + CODE_TTL,
            }
        )
    )
    return code


async def _active_grant(ctx: WorkspaceContext, client_id: str, joined_scopes: str) -> str:
    """The caller's live grant for `client_id` (scopes widened to include `joined_scopes`), or a new one."""
    m = scoped(ctx, members)
    # Serialize concurrent consents of one person (PostgreSQL row lock; SQLite write transactions are serial).
    await ctx.conn.execute(m.select(m.c.id).where(m.c.user_id == ctx.user_id).with_for_update())
    g = scoped(ctx, oauth_grants)
    row = (
        await ctx.conn.execute(
            g.select(g.c.id, g.c.scopes)
            .where(g.c.user_id == ctx.user_id, g.c.client_id == client_id, g.c.revoked_at.is_(None))
            .order_by(g.c.created_at.desc(), g.c.id.desc())
            .limit(1)
        )
    ).one_or_none()
    if row is not None:
        merged = _join_scopes(_split_scopes(row.scopes) + _split_scopes(joined_scopes))
        if merged != row.scopes:
            await ctx.conn.execute(g.update().where(g.c.id == row.id).values(scopes=merged))
        return str(row.id)
    grant_id = new_id("grant")
    await ctx.conn.execute(
        g.insert(
            {
                "id": grant_id,
                "user_id": ctx.user_id,
                "client_id": client_id,
                "scopes": joined_scopes,
                "created_at": ctx.now,
            }
        )
    )
    return grant_id


async def load_authorization_code(
    ctx: SystemContext, client_id: str, code: str
) -> AuthorizationCodeRecord | None:
    """The code if it is unused, unexpired, issued to `client_id` and its grant is still connected."""
    c = system_scope(oauth_codes)
    row = (
        await ctx.conn.execute(
            c.select(c.table, oauth_grants.c.user_id)
            .join(oauth_grants, oauth_grants.c.id == c.c.grant_id)
            .where(
                c.c.code_hash == hash_secret(code),
                c.c.client_id == client_id,
                c.c.used_at.is_(None),
                c.c.expires_at > ctx.now,
                oauth_grants.c.revoked_at.is_(None),
            )
        )
    ).one_or_none()
    if row is None:
        return None
    return AuthorizationCodeRecord.from_row(row, scopes=_split_scopes(row.scopes))


async def exchange_authorization_code(ctx: SystemContext, client_id: str, code: str) -> IssuedTokens:
    """Spend the code (once: the same code never yields tokens twice) and issue an access/refresh pair.

    Both tokens are bound to the code's grant and resource. Raises `InvalidGrant` for a code that is
    unknown, expired, already used, of another client, or whose grant was disconnected since.
    """
    c = system_scope(oauth_codes)
    code_hash = hash_secret(code)
    spent = await ctx.conn.execute(
        c.update()
        .where(
            c.c.code_hash == code_hash,
            c.c.client_id == client_id,
            c.c.used_at.is_(None),
            c.c.expires_at > ctx.now,
        )
        .values(used_at=ctx.now)
    )
    if spent.rowcount != 1:
        raise InvalidGrant("The authorization code is invalid, expired or already used.")
    row = (
        await ctx.conn.execute(
            c.select(c.c.workspace_id, c.c.grant_id, c.c.scopes, c.c.resource)
            .join(*grant_of(c.c.grant_id))
            .join(*membership_of_grant())
            .where(c.c.code_hash == code_hash, oauth_grants.c.revoked_at.is_(None))
        )
    ).one_or_none()
    if row is None:
        raise InvalidGrant("The app was disconnected, or the person is no longer a member of the workspace.")
    scopes = _split_scopes(row.scopes)
    return await _issue_pair(ctx, row.workspace_id, row.grant_id, client_id, scopes, row.resource)


async def detect_code_replay(ctx: SystemContext, client_id: str, code: str) -> bool:
    """Call when a presented code is refused. If it is a code of `client_id` that was already spent, it has
    been intercepted or replayed (RFC 6749 §4.1.2): revoke every token of its grant and return True."""
    c = system_scope(oauth_codes)
    grant_id = (
        await ctx.conn.execute(
            c.select(c.c.grant_id).where(
                c.c.code_hash == hash_secret(code), c.c.client_id == client_id, c.c.used_at.is_not(None)
            )
        )
    ).scalar_one_or_none()
    if grant_id is None:
        return False
    await _revoke_grant_tokens(ctx, grant_id)
    return True


# --- tokens (system) --------------------------------------------------------------------------------------


async def _issue_pair(
    ctx: SystemContext,
    workspace_id: str,
    grant_id: str,
    client_id: str,
    scopes: list[str],
    resource: str | None,
) -> IssuedTokens:
    access = ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(32)
    refresh = REFRESH_TOKEN_PREFIX + secrets.token_urlsafe(32)
    access_ttl = ctx.settings.oauth_access_ttl_s
    joined = " ".join(scopes)
    common = {
        "workspace_id": workspace_id,
        "grant_id": grant_id,
        "client_id": client_id,
        "scopes": joined,
        "resource": resource,
        "created_at": ctx.now,
    }
    await ctx.conn.execute(
        *system_scope(oauth_tokens).insert_many(
            [
                {
                    **common,
                    "token_hash": hash_secret(access),
                    "kind": "access",
                    "expires_at": ctx.now + timedelta(seconds=access_ttl),
                },
                {
                    **common,
                    "token_hash": hash_secret(refresh),
                    "kind": "refresh",
                    "expires_at": ctx.now + timedelta(seconds=ctx.settings.oauth_refresh_ttl_s),
                },
            ]
        )
    )
    return IssuedTokens(
        access_token=access, refresh_token=refresh, expires_in=access_ttl, scopes=scopes, grant_id=grant_id
    )


async def load_refresh_token(ctx: SystemContext, client_id: str, token: str) -> RefreshTokenRecord | None:
    """The refresh token if it is unrevoked, unexpired, of `client_id`, and its grant is still connected."""
    t = system_scope(oauth_tokens)
    row = (
        await ctx.conn.execute(
            t.select(
                t.c.grant_id, t.c.client_id, t.c.scopes, t.c.resource, t.c.expires_at, oauth_grants.c.user_id
            )
            .join(oauth_grants, oauth_grants.c.id == t.c.grant_id)
            .where(
                t.c.token_hash == hash_secret(token),
                t.c.kind == "refresh",
                t.c.client_id == client_id,
                t.c.revoked_at.is_(None),
                t.c.expires_at > ctx.now,
                oauth_grants.c.revoked_at.is_(None),
            )
        )
    ).one_or_none()
    if row is None:
        return None
    return RefreshTokenRecord.from_row(row, scopes=_split_scopes(row.scopes))


async def exchange_refresh_token(
    ctx: SystemContext, client_id: str, token: str, scopes: list[str] | None = None
) -> IssuedTokens:
    """Rotate: revoke the refresh token (once: a second use is refused) and issue a new access/refresh pair
    for the same grant and resource. `scopes` may narrow the pair to a subset of the token's scopes.

    Raises `InvalidGrant` for a token that is unknown, expired, revoked or of another client, and when
    the app was disconnected or the person left the workspace.
    """
    t = system_scope(oauth_tokens)
    token_hash = hash_secret(token)
    spent = await ctx.conn.execute(
        t.update()
        .where(
            t.c.token_hash == token_hash,
            t.c.kind == "refresh",
            t.c.client_id == client_id,
            t.c.revoked_at.is_(None),
            t.c.expires_at > ctx.now,
        )
        .values(revoked_at=ctx.now)
    )
    if spent.rowcount != 1:
        raise InvalidGrant("The refresh token is invalid, expired or already used.")
    row = (
        await ctx.conn.execute(
            t.select(t.c.workspace_id, t.c.grant_id, t.c.scopes, t.c.resource)
            .join(*grant_of(t.c.grant_id))
            .join(*membership_of_grant())
            .where(t.c.token_hash == token_hash, oauth_grants.c.revoked_at.is_(None))
        )
    ).one_or_none()
    if row is None:
        raise InvalidGrant("The app was disconnected, or the person is no longer a member of the workspace.")
    held = _split_scopes(row.scopes)
    if scopes is not None and not set(scopes) <= set(held):
        raise InvalidGrant("A refresh cannot add scopes the app was not granted.")
    return await _issue_pair(
        ctx, row.workspace_id, row.grant_id, client_id, held if scopes is None else scopes, row.resource
    )


async def detect_refresh_token_reuse(ctx: SystemContext, client_id: str, token: str) -> bool:
    """Call when a presented refresh token is refused. A token of `client_id` that was rotated away more
    than `REFRESH_REUSE_GRACE` ago is being replayed by someone who copied it: revoke every token of its
    grant (the person reconnects) and return True."""
    t = system_scope(oauth_tokens)
    row = (
        await ctx.conn.execute(
            t.select(t.c.grant_id, t.c.revoked_at).where(
                t.c.token_hash == hash_secret(token),
                t.c.kind == "refresh",
                t.c.client_id == client_id,
                t.c.revoked_at.is_not(None),
            )
        )
    ).one_or_none()
    if row is None or ctx.now - row.revoked_at < REFRESH_REUSE_GRACE:
        return False
    await _revoke_grant_tokens(ctx, row.grant_id)
    return True


async def revoke_token(ctx: SystemContext, token: str) -> None:
    """RFC 7009 revocation: revoke every access and refresh token of the grant `token` belongs to.

    The grant itself stays connected (the person need not consent again). Unknown tokens are ignored.
    """
    t = system_scope(oauth_tokens)
    grant_id = (
        await ctx.conn.execute(t.select(t.c.grant_id).where(t.c.token_hash == hash_secret(token)))
    ).scalar_one_or_none()
    if grant_id is not None:
        await _revoke_grant_tokens(ctx, grant_id)


async def _revoke_grant_tokens(ctx: SystemContext, grant_id: str) -> None:
    t = system_scope(oauth_tokens)
    await ctx.conn.execute(
        t.update().where(t.c.grant_id == grant_id, t.c.revoked_at.is_(None)).values(revoked_at=ctx.now)
    )


async def purge_expired_oauth(
    ctx: SystemContext,
    *,
    keep: timedelta = timedelta(days=1),
    unused_clients_after: timedelta = UNUSED_CLIENT_TTL,
) -> int:
    """Housekeeping for a worker: delete codes and tokens that expired more than `keep` ago (revoked ones
    are kept until then, so the reuse of a rotated refresh token is still recognised), and registered
    clients older than `unused_clients_after` that never completed a grant (anyone may register; nobody
    consented to these). Returns rows deleted. Grants, and so the clients that have one, are never deleted:
    a disconnected grant is the record of the connection."""
    cutoff = ctx.now - keep
    c, t = system_scope(oauth_codes), system_scope(oauth_tokens)
    codes = await ctx.conn.execute(c.delete().where(c.c.expires_at < cutoff))
    tokens = await ctx.conn.execute(t.delete().where(t.c.expires_at < cutoff))
    clients, grants = unscoped(oauth_clients), system_scope(oauth_grants)
    has_grant = grants.select(grants.c.id).where(grants.c.client_id == clients.c.id).exists()
    unused = await ctx.conn.execute(
        clients.delete().where(clients.c.created_at < ctx.now - unused_clients_after, ~has_grant)
    )
    return int(codes.rowcount or 0) + int(tokens.rowcount or 0) + int(unused.rowcount or 0)


# --- grants of a member (workspace) -----------------------------------------------------------------------


async def revoke_member_grants(ctx: WorkspaceContext, user_id: str) -> int:
    """Disconnect every app `user_id` connected to this workspace (for member removal). Returns how many.

    No permission check: the caller (removing a member) has already checked its own."""
    g = scoped(ctx, oauth_grants)
    live = g.select(g.c.id).where(g.c.user_id == user_id, g.c.revoked_at.is_(None))
    grant_ids = list((await ctx.conn.execute(live)).scalars())
    if grant_ids:
        await ctx.conn.execute(g.update().where(g.c.id.in_(grant_ids)).values(revoked_at=ctx.now))
        t = scoped(ctx, oauth_tokens)
        await ctx.conn.execute(
            t.update().where(t.c.grant_id.in_(grant_ids), t.c.revoked_at.is_(None)).values(revoked_at=ctx.now)
        )
    return len(grant_ids)
