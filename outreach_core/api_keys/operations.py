"""API keys: list, create (shown once), revoke."""

from __future__ import annotations

from sqlalchemy import func

from outreach_core.api_keys.keys import insert_key
from outreach_core.api_keys.schemas import (
    ApiKeyItem,
    CreateApiKeyIn,
    CreatedApiKey,
    CreatedBy,
    RevokeApiKeyIn,
)
from outreach_core.kernel.context import WorkspaceContext, scoped, unscoped
from outreach_core.kernel.db.tables import api_keys, users
from outreach_core.kernel.errors import Conflict, Forbidden, NotFound
from outreach_core.kernel.wire import Ok

MAX_ACTIVE_KEYS_PER_WORKSPACE = 100


async def list_api_keys(ctx: WorkspaceContext) -> list[ApiKeyItem]:
    """List the workspace's API keys that are not revoked (owners and admins see all, members their own).

    Secrets are never listed: each key shows its `start` prefix, creator, last use and expiry.
    """
    k = scoped(ctx, api_keys)
    u = unscoped(users)
    stmt = (
        k.select(
            k.c.id,
            k.c.name,
            k.c.start,
            k.c.created_at,
            k.c.last_used_at,
            k.c.expires_at,
            k.c.created_by,
            u.c.name.label("creator_name"),
        )
        .join(users, users.c.id == k.c.created_by)
        .where(k.c.revoked_at.is_(None))
        .order_by(k.c.created_at.desc(), k.c.id.desc())
    )
    if not ctx.has_role("owner", "admin"):
        stmt = stmt.where(k.c.created_by == ctx.user_id)
    rows = (await ctx.conn.execute(stmt)).all()
    return [
        ApiKeyItem.from_row(
            r,
            last_used_at=ctx.usage.last_used("api_key", r.id, r.last_used_at),
            created_by=CreatedBy(id=r.created_by, name=r.creator_name),
        )
        for r in rows
    ]


async def create_api_key(ctx: WorkspaceContext, body: CreateApiKeyIn) -> CreatedApiKey:
    """Create an API key for yourself in this workspace. The full key is returned once; store it now."""
    k = scoped(ctx, api_keys)
    active = (
        await ctx.conn.execute(
            k.select(func.count())
            .where(k.c.revoked_at.is_(None))
            .where((k.c.expires_at.is_(None)) | (k.c.expires_at > ctx.now))
        )
    ).scalar_one()
    if active >= MAX_ACTIVE_KEYS_PER_WORKSPACE:
        raise Conflict(
            f"A workspace can have at most {MAX_ACTIVE_KEYS_PER_WORKSPACE} active API keys; "
            "revoke one first.",
            {"limit": MAX_ACTIVE_KEYS_PER_WORKSPACE},
        )
    key_id, key = await insert_key(ctx, ctx.user_id, body.name, body.expires_in_days)
    return CreatedApiKey(id=key_id, key=key)


async def revoke_api_key(ctx: WorkspaceContext, body: RevokeApiKeyIn) -> Ok:
    """Revoke an API key at once: the next request made with it gets 401.

    Members can revoke their own keys; owners and admins any key of the workspace.
    """
    k = scoped(ctx, api_keys)
    row = (
        await ctx.conn.execute(k.select(k.c.created_by).where(k.c.id == body.id, k.c.revoked_at.is_(None)))
    ).one_or_none()
    if row is None:
        raise NotFound("API key", body.id)
    if row.created_by != ctx.user_id and not ctx.has_role("owner", "admin"):
        raise Forbidden(
            "Only owners and admins can revoke another member's key.", {"required": ["owner", "admin"]}
        )
    await ctx.conn.execute(k.update().where(k.c.id == body.id).values(revoked_at=ctx.now))
    return Ok()
