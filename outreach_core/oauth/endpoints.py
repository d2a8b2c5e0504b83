"""Connected apps (AI apps connected over OAuth): list them, disconnect one."""

from __future__ import annotations

from typing import Any

from outreach_core.context import WorkspaceContext
from outreach_core.endpoint import Endpoint
from outreach_core.oauth.operations import describe_connected_app, disconnect_app, list_connected_apps
from outreach_core.oauth.schemas import ConnectedApp
from outreach_core.wire import Ok


async def _describe_disconnect(ctx: WorkspaceContext, args: dict[str, Any]) -> str:
    label = await describe_connected_app(ctx, str(args.get("id")))
    return (
        f"Disconnect the app {label or args.get('id')}? Its access and refresh tokens stop working at once; "
        "it must ask for consent again to reconnect."
    )


ENDPOINTS = [
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
    ),
]
