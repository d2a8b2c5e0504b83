"""Connected apps: the AI apps a workspace's members connected over OAuth (`server.py` is the OAuth server
the MCP SDK calls)."""

from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import oauth_clients, oauth_grants, oauth_tokens, users
from outreach_core.kernel.errors import Forbidden, NotFound
from outreach_core.kernel.wire import Ok
from outreach_core.oauth.schemas import ConnectedApp, ConnectedAppUser


async def list_connected_apps(ctx: WorkspaceContext) -> list[ConnectedApp]:
    """List the AI apps connected to this workspace over OAuth, newest first.

    Everyone sees every connected app of the workspace; `mine` is true for the apps you connected
    yourself. `lastUsedAt` is when the app last called the workspace. Pass an app's `id` to
    disconnect_app to cut it off.
    """
    g = scoped(ctx, oauth_grants)
    rows = (
        await ctx.conn.execute(
            g.select(
                g.c.id,
                g.c.user_id,
                g.c.client_id,
                g.c.created_at,
                g.c.last_used_at,
                oauth_clients.c.name.label("client_name"),
                oauth_clients.c.uri.label("client_uri"),
                users.c.name.label("user_name"),
            )
            .join(oauth_clients, oauth_clients.c.id == g.c.client_id)
            .join(users, users.c.id == g.c.user_id)
            .where(g.c.revoked_at.is_(None))
            .order_by(g.c.created_at.desc(), g.c.id.desc())
        )
    ).all()
    return [
        ConnectedApp(
            id=r.id,
            name=r.client_name or r.client_id,
            uri=r.client_uri,
            user=ConnectedAppUser(id=r.user_id, name=r.user_name),
            connected_at=r.created_at,
            last_used_at=ctx.usage.last_used("grant", r.id, r.last_used_at),
            mine=r.user_id == ctx.user_id,
        )
        for r in rows
    ]


async def disconnect_app(ctx: WorkspaceContext, id: str) -> Ok:
    """Disconnect an AI app (a connected app `id` from list_connected_apps): every access and refresh
    token it holds stops working at once, and it must ask for consent again to reconnect.

    Members can disconnect apps they connected themselves; owners and admins can disconnect any app of
    the workspace.
    """
    g = scoped(ctx, oauth_grants)
    row = (
        await ctx.conn.execute(g.select(g.c.user_id).where(g.c.id == id, g.c.revoked_at.is_(None)))
    ).one_or_none()
    if row is None:
        raise NotFound("connected app", id)
    if row.user_id != ctx.user_id and not ctx.has_role("owner", "admin"):
        raise Forbidden(
            "Only owners and admins can disconnect an app another member connected.",
            {"required": ["owner", "admin"], "role": ctx.principal.role},
        )
    await ctx.conn.execute(g.update().where(g.c.id == id).values(revoked_at=ctx.now))
    t = scoped(ctx, oauth_tokens)
    await ctx.conn.execute(
        t.update().where(t.c.grant_id == id, t.c.revoked_at.is_(None)).values(revoked_at=ctx.now)
    )
    return Ok()
