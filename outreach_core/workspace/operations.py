"""Workspace: who am I, members and invitations, sending settings; operator set-up commands."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func

from outreach_core.billing.plan import billing_summary
from outreach_core.kernel.context import (
    SystemContext,
    WorkspaceContext,
    scoped,
    unscoped,
)
from outreach_core.kernel.db.tables import invitations, members, users, workspaces
from outreach_core.kernel.errors import Conflict, Forbidden, NotFound
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.wire import Ok
from outreach_core.oauth.server import revoke_member_grants
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
    WorkspaceSettings,
    WorkspaceSettingsPatch,
)
from outreach_core.workspace.store import get_member


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
        user=MeUser.from_row(user),
        workspace=MeWorkspace.from_row(row),
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
            Invitation.from_row(r)
            for r in (
                await ctx.conn.execute(i.select().where(i.c.expires_at > ctx.now).order_by(i.c.created_at))
            ).all()
        ]
    return Members(
        members=[Member.from_row(r, user=MemberUser.from_row(r)) for r in rows],
        invitations=invites,
    )


async def create_invitation(ctx: WorkspaceContext, body: CreateInvitationIn) -> Invitation:
    """Invite someone by email as admin or member (owners and admins). An operator accepts it with
    `outreach member add`, which creates the person's first API key."""
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
    i = scoped(ctx, invitations)
    if (await ctx.conn.execute(i.delete().where(i.c.id == id))).rowcount == 0:
        raise NotFound("invitation", id)
    return Ok()


async def update_member(ctx: WorkspaceContext, id: str, body: UpdateMemberIn) -> Member:
    """Change a member's role (owners only). The last owner cannot be demoted."""
    target = await get_member(ctx, id)
    if target.role == "owner" and body.role != "owner":
        await _ensure_another_owner(ctx, id)
    m = scoped(ctx, members)
    await ctx.conn.execute(m.update().where(m.c.id == id).values(role=body.role))
    return await get_member(ctx, id)


async def remove_member(ctx: WorkspaceContext, id: str) -> Ok:
    """Remove a member (owners and admins; only owners remove owners; never the last owner).
    Their API keys and connected apps stop working at once."""
    target = await get_member(ctx, id)
    if target.role == "owner":
        if not ctx.has_role("owner"):
            raise Forbidden.needs(["owner"], ctx.principal.role, "Only owners can remove an owner.")
        await _ensure_another_owner(ctx, id)
    m = scoped(ctx, members)
    await ctx.conn.execute(m.delete().where(m.c.id == id))
    await revoke_member_grants(ctx, target.user_id)
    return Ok()


async def get_sending_settings(ctx: WorkspaceContext) -> SendingSettings:
    """The workspace's sending settings: unsubscribe mode, AI labelling, own AI key."""
    ws = scoped(ctx, workspaces)
    row = (await ctx.conn.execute(ws.select(ws.c.unsubscribe_mode, ws.c.ai_labels, ws.c.own_ai_key))).one()
    return SendingSettings.from_row(row)


async def update_sending_settings(ctx: WorkspaceContext, body: SendingSettingsPatch) -> SendingSettings:
    """Change how {{unsubscribe}} renders (link or reply_text) and whether replies are labelled by AI
    (owners and admins). Fields left out stay as they are."""
    values = body.model_dump(exclude_unset=True, exclude_none=True, by_alias=False)
    if values:
        ws = scoped(ctx, workspaces)
        await ctx.conn.execute(ws.update().values(**values))
    return await get_sending_settings(ctx)


async def get_workspace_settings(ctx: WorkspaceContext) -> WorkspaceSettings:
    """The workspace's name and time zone (IANA; analytics count calendar days in it)."""
    ws = scoped(ctx, workspaces)
    return WorkspaceSettings.from_row((await ctx.conn.execute(ws.select(ws.c.name, ws.c.timezone))).one())


async def update_workspace_settings(ctx: WorkspaceContext, body: WorkspaceSettingsPatch) -> WorkspaceSettings:
    """Rename the workspace or set its time zone (an IANA name such as Europe/Berlin; an unknown one is
    refused). Analytics then count calendar days in the new zone, from the same counters. Owners and admins.
    Fields left out stay as they are."""
    values = body.model_dump(exclude_unset=True, exclude_none=True, by_alias=False)
    if values:
        ws = scoped(ctx, workspaces)
        await ctx.conn.execute(ws.update().values(**values))
    return await get_workspace_settings(ctx)


# --- helpers ---------------------------------------------------------------------------------------------


async def _ensure_another_owner(ctx: WorkspaceContext, member_id: str) -> None:
    m = scoped(ctx, members)
    owners = (
        await ctx.conn.execute(m.select(func.count()).where(m.c.role == "owner", m.c.id != member_id))
    ).scalar_one()
    if owners == 0:
        raise Conflict("A workspace must keep at least one owner.")
