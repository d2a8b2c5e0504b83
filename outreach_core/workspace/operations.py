"""Workspace: who am I, members and invitations, sending settings; operator set-up commands."""

from __future__ import annotations

import re
from datetime import timedelta

from pydantic import BaseModel
from sqlalchemy import func

from outreach_core.api_keys.operations import insert_key
from outreach_core.billing.operations import billing_summary, set_plan
from outreach_core.context import (
    Principal,
    SystemContext,
    WorkspaceContext,
    as_workspace,
    scoped,
    system_scope,
    unscoped,
)
from outreach_core.db.tables import invitations, members, users, workspaces
from outreach_core.errors import Conflict, InvalidInput, NotFound
from outreach_core.ids import new_id
from outreach_core.oauth.operations import revoke_member_grants
from outreach_core.wire import CONTROL_MESSAGE, Ok, has_control_characters
from outreach_core.workspace.schemas import (
    CreateInvitationIn,
    Invitation,
    Me,
    Member,
    Members,
    MemberUser,
    MeUser,
    MeWorkspace,
    Ping,
    SendingSettings,
    SendingSettingsPatch,
    UpdateMemberIn,
)


async def ping(ctx: SystemContext) -> Ping:
    """Liveness check; needs no credential."""
    return Ping(time=ctx.now)


async def get_me(ctx: WorkspaceContext) -> Me:
    """Who you are: your user, the workspace, your role, how you authenticated and the workspace's plan."""
    ws = scoped(ctx, workspaces)
    row = (await ctx.conn.execute(ws.select())).one()
    u = unscoped(users)
    user = (await ctx.conn.execute(u.select().where(u.c.id == ctx.user_id))).one()
    return Me(
        user=MeUser(id=user.id, name=user.name, email=user.email),
        workspace=MeWorkspace(id=row.id, name=row.name, slug=row.slug),
        role=ctx.principal.role,
        auth=ctx.principal.auth,
        billing=await billing_summary(ctx, row),
    )


async def list_members(ctx: WorkspaceContext) -> Members:
    """Members of the workspace with their roles; pending invitations are listed for owners and admins."""
    m = scoped(ctx, members)
    rows = (
        await ctx.conn.execute(
            m.select(m.c.id, m.c.user_id, m.c.role, m.c.created_at, users.c.name, users.c.email)
            .join(users, users.c.id == m.c.user_id)
            .order_by(m.c.created_at, m.c.id)
        )
    ).all()
    invites: list[Invitation] = []
    if ctx.has_role("owner", "admin"):
        i = scoped(ctx, invitations)
        invites = [
            Invitation(id=r.id, email=r.email, role=r.role, expires_at=r.expires_at)
            for r in (
                await ctx.conn.execute(i.select().where(i.c.expires_at > ctx.now).order_by(i.c.created_at))
            ).all()
        ]
    return Members(
        members=[
            Member(
                id=r.id,
                user_id=r.user_id,
                role=r.role,
                created_at=r.created_at,
                user=MemberUser(name=r.name, email=r.email),
            )
            for r in rows
        ],
        invitations=invites,
    )


async def create_invitation(ctx: WorkspaceContext, body: CreateInvitationIn) -> Invitation:
    """Invite someone by email as admin or member (owners and admins). An operator accepts it with
    `outreach member add`, which creates the person's first API key."""
    ctx.require_role("owner", "admin")
    email = body.email.lower()
    m = scoped(ctx, members)
    existing = (
        await ctx.conn.execute(
            m.select(m.c.id).join(users, users.c.id == m.c.user_id).where(func.lower(users.c.email) == email)
        )
    ).first()
    if existing is not None:
        raise Conflict("That person is already a member.", {"email": email})
    i = scoped(ctx, invitations)
    await ctx.conn.execute(i.delete().where(i.c.email == email))
    row = {
        "id": new_id("inv"),
        "email": email,
        "role": body.role,
        "invited_by": ctx.user_id,
        "expires_at": ctx.now + timedelta(days=body.expires_in_days),
        "created_at": ctx.now,
    }
    await ctx.conn.execute(i.insert(row))
    return Invitation(id=row["id"], email=email, role=body.role, expires_at=row["expires_at"])


async def delete_invitation(ctx: WorkspaceContext, id: str) -> Ok:
    """Withdraw a pending invitation (owners and admins)."""
    ctx.require_role("owner", "admin")
    i = scoped(ctx, invitations)
    if (await ctx.conn.execute(i.delete().where(i.c.id == id))).rowcount == 0:
        raise NotFound("invitation", id)
    return Ok()


async def update_member(ctx: WorkspaceContext, id: str, body: UpdateMemberIn) -> Member:
    """Change a member's role (owners only). The last owner cannot be demoted."""
    ctx.require_role("owner")
    target = await get_member(ctx, id)
    if target.role == "owner" and body.role != "owner":
        await _ensure_another_owner(ctx, id)
    m = scoped(ctx, members)
    await ctx.conn.execute(m.update().where(m.c.id == id).values(role=body.role))
    return await get_member(ctx, id)


async def remove_member(ctx: WorkspaceContext, id: str) -> Ok:
    """Remove a member (owners and admins; only owners remove owners; never the last owner).
    Their API keys and connected apps stop working at once."""
    ctx.require_role("owner", "admin")
    target = await get_member(ctx, id)
    if target.role == "owner":
        ctx.require_role("owner")
        await _ensure_another_owner(ctx, id)
    m = scoped(ctx, members)
    await ctx.conn.execute(m.delete().where(m.c.id == id))
    await revoke_member_grants(ctx, target.user_id)
    return Ok()


async def get_sending_settings(ctx: WorkspaceContext) -> SendingSettings:
    """The workspace's sending settings: unsubscribe mode, AI labelling, own AI key."""
    ws = scoped(ctx, workspaces)
    row = (await ctx.conn.execute(ws.select(ws.c.unsubscribe_mode, ws.c.ai_labels, ws.c.own_ai_key))).one()
    return SendingSettings(
        unsubscribe_mode=row.unsubscribe_mode, ai_labels=row.ai_labels, own_ai_key=row.own_ai_key
    )


async def update_sending_settings(ctx: WorkspaceContext, body: SendingSettingsPatch) -> SendingSettings:
    """Change how {{unsubscribe}} renders (link or reply_text) and whether replies are labelled by AI
    (owners and admins). Fields left out stay as they are."""
    ctx.require_role("owner", "admin")
    values = body.model_dump(exclude_unset=True, exclude_none=True, by_alias=False)
    if values:
        ws = scoped(ctx, workspaces)
        await ctx.conn.execute(ws.update().values(**values))
    return await get_sending_settings(ctx)


# --- helpers ---------------------------------------------------------------------------------------------


async def get_member(ctx: WorkspaceContext, id: str) -> Member:
    m = scoped(ctx, members)
    r = (
        await ctx.conn.execute(
            m.select(m.c.id, m.c.user_id, m.c.role, m.c.created_at, users.c.name, users.c.email)
            .join(users, users.c.id == m.c.user_id)
            .where(m.c.id == id)
        )
    ).one_or_none()
    if r is None:
        raise NotFound("member", id)
    return Member(
        id=r.id,
        user_id=r.user_id,
        role=r.role,
        created_at=r.created_at,
        user=MemberUser(name=r.name, email=r.email),
    )


async def _ensure_another_owner(ctx: WorkspaceContext, member_id: str) -> None:
    m = scoped(ctx, members)
    owners = (
        await ctx.conn.execute(m.select(func.count()).where(m.c.role == "owner", m.c.id != member_id))
    ).scalar_one()
    if owners == 0:
        raise Conflict("A workspace must keep at least one owner.")


# --- operator set-up (CLI) -------------------------------------------------------------------------------


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
    ws = system_scope(workspaces)
    if (await ctx.conn.execute(ws.select(ws.c.id).where(ws.c.slug == slug))).first() is not None:
        raise Conflict(f"The slug {slug!r} is taken.", {"slug": slug})
    user_id = await _user_for(ctx, email, name)
    workspace_id = new_id("ws")
    await ctx.conn.execute(
        ws.insert({"id": workspace_id, "name": workspace, "slug": slug, "created_at": ctx.now})
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
    if plan:
        await set_plan(ctx, workspace_id, plan)
    _, key = await insert_key(wctx, user_id, "outreach init", None)
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
