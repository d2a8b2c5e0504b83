"""REST/MCP parity cases of the workspace: me, members, invitations, sending settings."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, invitation, member_id, no_args, nothing_named, unique


async def settings_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"unsubscribeMode": "reply_text"}, {"aiLabels": False}, {}, {"unsubscribeMode": "smoke"}]


async def workspace_settings_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [
        {"timezone": "Europe/Berlin"},
        {"name": "Renamed"},
        {},
        {"timezone": "Mars/Olympus_Mons"},
        {"timezone": ""},
        {"name": ""},
    ]


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
    "get_workspace_settings": no_args,
    "update_workspace_settings": workspace_settings_args,
    "create_invitation": invitation_args,
    "delete_invitation": delete_invitation_args,
    "update_member": update_member_args,
    "remove_member": remove_member_args,
}


async def their_member(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> tuple[WorkspaceHandle, str]:
    person = await theirs.add_member("member")
    return person, await member_id(http, theirs, person.user_id)


async def their_people(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    await their_member(http, theirs)
    await invitation(http, theirs, f"their-invite-{next(unique)}@example.com")
    return [{}]


async def their_settings(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"unsubscribeMode": "reply_text", "aiLabels": False}]


async def their_workspace_settings(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    return [{"timezone": "Asia/Tokyo", "name": "Mine only"}]


async def their_person_invited(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Their member is no member here: inviting them to this workspace works and leaves theirs alone."""
    person, _ = await their_member(http, theirs)
    return [{"email": person.email, "role": "member"}]


async def their_invitation(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await invitation(http, theirs, f"their-invite-{next(unique)}@example.com")}]


async def their_member_promoted(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    return [{"id": (await their_member(http, theirs))[1], "role": "owner"}]


async def their_member_removed(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    return [{"id": (await their_member(http, theirs))[1]}]


FOREIGN: dict[str, Foreign] = {
    "get_me": their_people,
    "list_members": their_people,
    "get_sending_settings": nothing_named,
    "update_sending_settings": their_settings,
    "get_workspace_settings": nothing_named,
    "update_workspace_settings": their_workspace_settings,
    "create_invitation": their_person_invited,
    "delete_invitation": their_invitation,
    "update_member": their_member_promoted,
    "remove_member": their_member_removed,
}
