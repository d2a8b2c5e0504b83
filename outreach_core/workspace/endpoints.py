from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok
from outreach_core.workspace.operations import (
    create_invitation,
    delete_invitation,
    get_me,
    get_sending_settings,
    get_workspace_settings,
    list_members,
    remove_member,
    update_member,
    update_sending_settings,
    update_workspace_settings,
)
from outreach_core.workspace.schemas import (
    CreateInvitationIn,
    Invitation,
    Me,
    Member,
    Members,
    SendingSettings,
    SendingSettingsPatch,
    UpdateMemberIn,
    WorkspaceSettings,
    WorkspaceSettingsPatch,
)
from outreach_core.workspace.store import get_member


async def _describe_remove(ctx: WorkspaceContext, id: str) -> str:
    member = await get_member(ctx, id)
    return (
        f"Remove {member.user.name} <{member.user.email}> ({member.role}) from the workspace? "
        "Their API keys and connected apps stop working immediately."
    )


ENDPOINTS = (
    Endpoint("GET", "/me", get_me, Me, read_only=True, tag="workspace", title="Who am I"),
    Endpoint("GET", "/members", list_members, Members, read_only=True, tag="workspace"),
    Endpoint(
        "POST",
        "/invitations",
        create_invitation,
        Invitation,
        body=CreateInvitationIn,
        role="admin",
        tag="workspace",
    ),
    Endpoint(
        "DELETE",
        "/invitations/{id}",
        delete_invitation,
        Ok,
        destructive=True,
        role="admin",
        tag="workspace",
        idempotent=True,
    ),
    Endpoint(
        "PATCH",
        "/members/{id}",
        update_member,
        Member,
        body=UpdateMemberIn,
        role="owner",
        tag="workspace",
        destructive=True,
        idempotent=True,
    ),
    Endpoint(
        "DELETE",
        "/members/{id}",
        remove_member,
        Ok,
        destructive=True,
        confirm=_describe_remove,
        role="admin",
        tag="workspace",
        idempotent=True,
    ),
    Endpoint(
        "GET",
        "/settings/sending",
        get_sending_settings,
        SendingSettings,
        read_only=True,
        tag="workspace",
    ),
    Endpoint(
        "PATCH",
        "/settings/sending",
        update_sending_settings,
        SendingSettings,
        body=SendingSettingsPatch,
        role="admin",
        tag="workspace",
        destructive=True,
        idempotent=True,
    ),
    # issue 28: the workspace's time zone, in which analytics count calendar days
    Endpoint(
        "GET",
        "/settings/workspace",
        get_workspace_settings,
        WorkspaceSettings,
        read_only=True,
        tag="workspace",
    ),
    Endpoint(
        "PATCH",
        "/settings/workspace",
        update_workspace_settings,
        WorkspaceSettings,
        body=WorkspaceSettingsPatch,
        role="admin",
        idempotent=True,
        destructive=True,
        tag="workspace",
    ),
)
