"""Authentication: turn a bearer credential into a `Principal`, or refuse with 401.

Checked against the database on every request (one indexed read), so a revoked or expired key, a removed
member or a disconnected app is refused on the very next request. `lastUsedAt` is remembered in memory and
flushed in batches (`outreach_core.kernel.usage`).
"""

from __future__ import annotations

from typing import Any

from outreach_core.api_keys.rules import hash_secret, looks_like_api_key
from outreach_core.kernel.context import Principal, SystemContext, system_scope
from outreach_core.kernel.db.tables import api_keys, members, oauth_grants, oauth_tokens
from outreach_core.kernel.errors import Unauthorized

ACCESS_TOKEN_PREFIX = "oat_"
REFRESH_TOKEN_PREFIX = "ort_"


def grant_of(grant_id: Any) -> tuple[Any, Any]:
    """Join arguments: the OAuth grant a code or token belongs to."""
    return oauth_grants, oauth_grants.c.id == grant_id


def membership_of_grant() -> tuple[Any, Any]:
    """Join arguments: the current membership of the person who granted (none once they are removed)."""
    return members, (members.c.workspace_id == oauth_grants.c.workspace_id) & (
        members.c.user_id == oauth_grants.c.user_id
    )


def _refuse(reason: str) -> Unauthorized:
    return Unauthorized(reason)


async def authenticate_api_key(ctx: SystemContext, token: str) -> Principal:
    """A workspace API key → the member who created it, with their current role."""
    if not looks_like_api_key(token):
        raise _refuse("Malformed API key.")
    k = system_scope(api_keys)
    row = (
        await ctx.conn.execute(
            k.select(k.c.id, k.c.workspace_id, k.c.created_by, k.c.expires_at, k.c.revoked_at, members.c.role)
            .join(
                members,
                (members.c.workspace_id == k.c.workspace_id) & (members.c.user_id == k.c.created_by),
            )
            .where(k.c.key_hash == hash_secret(token))
        )
    ).one_or_none()
    if row is None:
        raise _refuse("Unknown API key.")
    if row.revoked_at is not None:
        raise _refuse("This API key was revoked.")
    if row.expires_at is not None and row.expires_at <= ctx.now:
        raise _refuse("This API key has expired.")
    ctx.usage.touch("api_key", row.id, ctx.now)
    return Principal(
        user_id=row.created_by,
        workspace_id=row.workspace_id,
        role=row.role,
        auth="api_key",
        credential_id=row.id,
    )


async def authenticate_oauth(ctx: SystemContext, token: str, resource: str) -> Principal:
    """An OAuth access token issued for `resource` (audience check) → the member who granted it."""
    if not token.startswith(ACCESS_TOKEN_PREFIX):
        raise _refuse("Malformed access token.")
    t = system_scope(oauth_tokens)
    row = (
        await ctx.conn.execute(
            t.select(
                t.c.grant_id,
                t.c.client_id,
                t.c.expires_at,
                t.c.revoked_at,
                t.c.resource,
                t.c.scopes,
                oauth_grants.c.revoked_at.label("grant_revoked_at"),
                oauth_grants.c.workspace_id,
                oauth_grants.c.user_id,
                members.c.role,
            )
            .join(*grant_of(t.c.grant_id))
            .join(*membership_of_grant())
            .where(t.c.token_hash == hash_secret(token), t.c.kind == "access")
        )
    ).one_or_none()
    if row is None or row.revoked_at is not None or row.grant_revoked_at is not None:
        raise _refuse("Unknown or revoked access token.")
    if row.expires_at <= ctx.now:
        raise _refuse("The access token has expired; refresh it.")
    if row.resource != resource:
        raise _refuse("The access token was issued for another resource.")
    ctx.usage.touch("grant", row.grant_id, ctx.now)
    return Principal(
        user_id=row.user_id,
        workspace_id=row.workspace_id,
        role=row.role,
        auth="oauth",
        credential_id=row.grant_id,
        client_id=row.client_id,
        scopes=tuple(row.scopes.split()),
    )


async def authenticate_bearer(
    ctx: SystemContext, token: str, *, oauth_resource: str | None = None
) -> Principal:
    """API keys are accepted everywhere; OAuth access tokens only where `oauth_resource` says (on `/mcp`)."""
    if oauth_resource is not None and token.startswith(ACCESS_TOKEN_PREFIX):
        return await authenticate_oauth(ctx, token, oauth_resource)
    return await authenticate_api_key(ctx, token)
