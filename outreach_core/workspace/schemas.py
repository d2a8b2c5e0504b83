from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from outreach_core.billing.schemas import BillingSummary
from outreach_core.kernel.wire import TIME_ZONE, EmailAddress, Omittable, Timestamp, WireModel
from outreach_core.workspace.rules import known_time_zone

Role = Literal["owner", "admin", "member"]
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9](?:[a-z0-9-]{0,58}[a-z0-9])?$")]


class Ping(WireModel):
    ok: bool = True
    time: Timestamp


class MeUser(WireModel):
    id: str
    name: str
    email: str


class MeWorkspace(WireModel):
    id: str
    name: str
    slug: str


class Me(WireModel):
    user: MeUser
    workspace: MeWorkspace
    role: Role
    auth: Literal["session", "api_key", "oauth"]
    billing: BillingSummary


class MemberUser(WireModel):
    name: str
    email: str


class Member(WireModel):
    id: str
    user_id: str
    role: Role
    created_at: Timestamp
    user: MemberUser


class Invitation(WireModel):
    id: str
    email: str
    role: Role | None
    expires_at: Timestamp


class Members(WireModel):
    members: list[Member]
    invitations: list[Invitation] = Field(
        description="Pending invitations; empty unless you are an owner or admin."
    )


class CreateInvitationIn(WireModel):
    email: EmailAddress = Field(description="The address of the person invited.")
    role: Literal["admin", "member"] = Field(
        default="member", description=("The role they get: admin or member (default member).")
    )
    expires_in_days: int = Field(
        default=7, ge=1, le=30, description=("Days the invitation stays valid, 1 to 30 (default 7).")
    )


class UpdateMemberIn(WireModel):
    role: Role = Field(description="The member's new role: owner, admin or member.")


class SendingSettings(WireModel):
    unsubscribe_mode: Literal["link", "reply_text"] = Field(
        description="What {{unsubscribe}} becomes: a one-click link, or a line asking to reply with 'stop'."
    )
    ai_labels: bool = Field(description="Label replies with AI; off = rule-based labels only.")
    own_ai_key: Literal["openai", "google"] | None = Field(description="Read-only.")


class SendingSettingsPatch(WireModel):
    unsubscribe_mode: Omittable[Literal["link", "reply_text"]] = Field(
        default=None,
        description=(
            "How {{unsubscribe}} renders: `link` (an unsubscribe link) or `reply_text` (a line asking "
            "to reply to unsubscribe)."
        ),
    )
    ai_labels: Omittable[bool] = Field(
        default=None,
        description=("true: replies are labelled by AI when one is configured; false: by rules only."),
    )


# --- workspace settings (issue 28: analytics days are calendar days in this zone) -------------------------

TimeZoneName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64),
    TIME_ZONE,
    AfterValidator(known_time_zone),
    Field(description="IANA time zone, e.g. Europe/Berlin; analytics days are calendar days in it."),
]


class WorkspaceSettings(WireModel):
    name: str
    timezone: str = Field(description="IANA time zone; analytics days are calendar days in it.")


class WorkspaceSettingsPatch(WireModel):
    name: Omittable[Annotated[str, StringConstraints(min_length=1, max_length=60, strip_whitespace=True)]] = (
        Field(default=None, description="The workspace's new name, 1 to 60 characters.")
    )
    timezone: Omittable[TimeZoneName] = Field(
        default=None,
        description="IANA time zone, e.g. Europe/Berlin; analytics days are calendar days in it.",
    )
