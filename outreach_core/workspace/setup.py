"""Operator set-up (the `outreach init` and `outreach member add` commands): a workspace with its first
owner and API key, and a person added to a workspace. System work, no caller."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func

from outreach_core.api_keys.keys import insert_key
from outreach_core.billing.plan import set_plan
from outreach_core.kernel.context import (
    Principal,
    SystemContext,
    as_workspace,
    scoped,
    system_scope,
    unscoped,
)
from outreach_core.kernel.db.tables import invitations, members, users, workspaces
from outreach_core.kernel.errors import Conflict, InvalidInput, NotFound
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.wire import CONTROL_MESSAGE, has_control_characters
from outreach_core.labels.builtin import ensure_builtin_labels


class InitResult(BaseModel):
    userId: str
    workspaceId: str
    slug: str
    apiKey: str


class MemberAdded(BaseModel):
    userId: str
    memberId: str
    role: str
    apiKey: str


def _check_name(field: str, value: str) -> None:
    """Workspace and person names refuse control characters, like every name of the API (`wire.NAME`)."""
    if has_control_characters(value):
        raise InvalidInput.field(field, f"{field} {CONTROL_MESSAGE}")


def slugify(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60].strip("-")
    return slug or "workspace"


async def _user_for(ctx: SystemContext, email: str, name: str) -> str:
    u = unscoped(users)
    row = (
        await ctx.conn.execute(u.select(u.c.id).where(func.lower(u.c.email) == email.lower()))
    ).one_or_none()
    if row is not None:
        return str(row.id)
    user_id = new_id("usr")
    await ctx.conn.execute(
        u.insert({"id": user_id, "email": email.lower(), "name": name, "created_at": ctx.now})
    )
    return user_id


async def init_workspace(
    ctx: SystemContext,
    *,
    email: str,
    name: str,
    workspace: str,
    slug: str | None = None,
    plan: str | None = None,
) -> InitResult:
    """Create (or reuse) a user, create a workspace with that user as owner, and issue an API key."""
    if not 1 <= len(workspace) <= 60:
        raise InvalidInput.field("workspace", "name must be 1 to 60 characters")
    _check_name("workspace", workspace)
    _check_name("name", name)
    if "@" not in email:
        raise InvalidInput.field("email", "not an email address")
    slug = slug or slugify(workspace)
    if not re.fullmatch(r"[a-z0-9](?:[a-z0-9-]{0,58}[a-z0-9])?", slug):
        raise InvalidInput.field("slug", "lowercase letters, digits and hyphens, 1 to 60 characters")
    await ensure_slug_free(ctx, slug)
    user_id = await _user_for(ctx, email, name)
    created = await new_workspace(ctx, user_id, workspace, slug, key_name="outreach init")
    if plan:
        await set_plan(ctx, created.workspaceId, plan)
    return created


async def ensure_slug_free(ctx: SystemContext, slug: str) -> None:
    """Refuse with 409 `conflict` a slug another workspace has (slugs are unique across the server)."""
    ws = system_scope(workspaces)
    if (await ctx.conn.execute(ws.select(ws.c.id).where(ws.c.slug == slug))).first() is not None:
        raise Conflict(f"The slug {slug!r} is taken.", {"slug": slug})


async def new_workspace(
    ctx: SystemContext, user_id: str, name: str, slug: str, *, key_name: str, **values: Any
) -> InitResult:
    """A new workspace (`values`: more of its columns) with `user_id` as its owner, its built-in labels,
    and a first API key for that owner (returned once). The slug must be free (`ensure_slug_free`)."""
    ws = system_scope(workspaces)
    workspace_id = new_id("ws")
    await ctx.conn.execute(
        ws.insert({"id": workspace_id, "name": name, "slug": slug, "created_at": ctx.now, **values})
    )
    principal = Principal(
        user_id=user_id, workspace_id=workspace_id, role="owner", auth="api_key", credential_id=""
    )
    wctx = as_workspace(ctx, principal)
    await ctx.conn.execute(
        scoped(wctx, members).insert(
            {"id": new_id("mem"), "user_id": user_id, "role": "owner", "created_at": ctx.now}
        )
    )
    await ensure_builtin_labels(wctx)
    _, key = await insert_key(wctx, user_id, key_name, None)
    return InitResult(userId=user_id, workspaceId=workspace_id, slug=slug, apiKey=key)


async def add_member(
    ctx: SystemContext, *, workspace: str, email: str, name: str, role: str | None = None
) -> MemberAdded:
    """Operator command: add a person to a workspace (accepting their invitation if any) with a first API key.

    The role is the invitation's, else `role`, else member.
    """
    _check_name("name", name)
    ws = system_scope(workspaces)
    row = (
        await ctx.conn.execute(ws.select(ws.c.id).where((ws.c.id == workspace) | (ws.c.slug == workspace)))
    ).one_or_none()
    if row is None:
        raise NotFound("workspace", workspace)
    user_id = await _user_for(ctx, email, name)
    wctx = as_workspace(
        ctx, Principal(user_id=user_id, workspace_id=row.id, role="member", auth="api_key", credential_id="")
    )
    i = scoped(wctx, invitations)
    invite = (await ctx.conn.execute(i.select().where(i.c.email == email.lower()))).one_or_none()
    chosen = role or (invite.role if invite else None) or "member"
    if chosen not in ("owner", "admin", "member"):
        raise InvalidInput.field("role", "owner, admin or member")
    m = scoped(wctx, members)
    if (await ctx.conn.execute(m.select(m.c.id).where(m.c.user_id == user_id))).first() is not None:
        raise Conflict("That person is already a member.", {"email": email})
    member_id = new_id("mem")
    await ctx.conn.execute(
        m.insert({"id": member_id, "user_id": user_id, "role": chosen, "created_at": ctx.now})
    )
    if invite is not None:
        await ctx.conn.execute(i.delete().where(i.c.id == invite.id))
    _, key = await insert_key(wctx, user_id, "outreach member add", None)
    return MemberAdded(userId=user_id, memberId=member_id, role=chosen, apiKey=key)


async def workspace_id_of(ctx: SystemContext, workspace: str) -> str:
    """Operator commands: the id of the workspace named by its id or slug (404 when there is none)."""
    ws = system_scope(workspaces)
    row = (
        await ctx.conn.execute(ws.select(ws.c.id).where((ws.c.id == workspace) | (ws.c.slug == workspace)))
    ).one_or_none()
    if row is None:
        raise NotFound("workspace", workspace)
    return str(row.id)
