"""REST/MCP parity cases of the workspace: me, members, invitations, sending settings."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Prepare,
    invitation,
    member_id,
    no_args,
    unique,
)


async def settings_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"unsubscribeMode": "reply_text"}, {"aiLabels": False}, {}, {"unsubscribeMode": "smoke"}]


async def invitation_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"email": "parity@example.com", "role": "admin"}, {"email": "not-an-email"}]


async def delete_invitation_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    email = f"gone-{next(unique)}@example.com"
    return [{"id": await invitation(http, ws, email)}, {"id": "inv_missing"}]


async def update_member_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    member = await ws.add_member("member")
    return [
        {"id": await member_id(http, ws, member.user_id), "role": "admin"},
        {"id": "mem_missing", "role": "admin"},
    ]


async def remove_member_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    member = await ws.add_member("member")
    return [
        {"id": await member_id(http, ws, member.user_id), "confirm": True},
        {"id": "mem_missing", "confirm": True},
    ]


CASES: dict[str, Prepare] = {
    "get_me": no_args,
    "list_members": no_args,
    "get_sending_settings": no_args,
    "update_sending_settings": settings_args,
    "create_invitation": invitation_args,
    "delete_invitation": delete_invitation_args,
    "update_member": update_member_args,
    "remove_member": remove_member_args,
}
