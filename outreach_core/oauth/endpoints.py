"""Connected apps (AI apps connected over OAuth): list them, disconnect one."""

from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import oauth_clients, oauth_grants, users
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok
from outreach_core.oauth.operations import disconnect_app, list_connected_apps
from outreach_core.oauth.schemas import ConnectedApp


async def _connected_app(ctx: WorkspaceContext, id: str) -> str | None:
    """The display name of a connected app of this workspace (None when there is no such live app)."""
    g = scoped(ctx, oauth_grants)
    row = (
        await ctx.conn.execute(
            g.select(g.c.client_id, oauth_clients.c.name, users.c.name.label("user_name"))
            .join(oauth_clients, oauth_clients.c.id == g.c.client_id)
            .join(users, users.c.id == g.c.user_id)
            .where(g.c.id == id, g.c.revoked_at.is_(None))
        )
    ).one_or_none()
    if row is None:
        return None
    return f"“{row.name or row.client_id}” (connected by {row.user_name})"


async def _describe_disconnect(ctx: WorkspaceContext, id: str) -> str:
    label = await _connected_app(ctx, id)
    return (
        f"Disconnect the app {label or id}? Its access and refresh tokens stop working at once; "
        "it must ask for consent again to reconnect."
    )


ENDPOINTS = (
    Endpoint(
        "GET",
        "/connected-apps",
        list_connected_apps,
        list[ConnectedApp],
        read_only=True,
        tag="connected-apps",
    ),
    Endpoint(
        "POST",
        "/connected-apps/{id}/disconnect",
        disconnect_app,
        Ok,
        destructive=True,
        confirm=_describe_disconnect,
        tag="connected-apps",
        idempotent=True,
    ),
)
