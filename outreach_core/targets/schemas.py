"""The wire models every lead domain shares: statuses, ids, the lead filter and the lead target, the
inputs that name a target, and the counts actions answer with."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import ExactlyOne, Omittable, WireModel

LeadStatus = Literal["active", "replied", "interested", "won", "bounced", "unsubscribed", "suppressed"]
VerifyStatus = Literal["unknown", "verifying", "valid", "risky", "invalid", "catch_all"]
Esp = Literal["google", "microsoft", "yahoo", "proton", "icloud", "zoho", "other", "unknown"]
CountrySource = Literal["timezone", "phone", "email", "website"]
LEAD_STATUSES: tuple[str, ...] = get_args(LeadStatus)
VERIFY_STATUSES: tuple[str, ...] = get_args(VerifyStatus)
ESPS: tuple[str, ...] = get_args(Esp)

Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class LeadFilter(WireModel):
    """The filters of `list_leads`, also usable as a lead target."""

    search: str | None = Field(
        default=None, max_length=200, description=("Part of the lead's email address, name or company.")
    )
    list_id: Id | None = Field(default=None, description="Only leads on this list.")
    label_id: Id | None = Field(default=None, description="A label id, or `none` for leads without labels.")
    status: list[LeadStatus] | None = Field(
        default=None, description=("Only leads with any of these statuses.")
    )
    verify: list[VerifyStatus] | None = Field(
        default=None, description=("Only leads with any of these verification results.")
    )
    esp: list[Esp] | None = Field(
        default=None, description=("Only leads whose address is at any of these email providers.")
    )


TargetIds = Annotated[list[Id], Field(min_length=1, max_length=10_000)]


class LeadTarget(ExactlyOne):
    """Which leads an action applies to: exactly one of `ids`, `listId`, `filter`, `all`."""

    ids: Omittable[TargetIds] = Field(default=None, description="These leads, by id (up to 10,000).")
    list_id: Omittable[Id] = Field(default=None, description="Every lead on this list.")
    filter: Omittable[LeadFilter] = Field(
        default=None, description=("Every lead matching these list_leads filters.")
    )
    all: Omittable[Literal[True]] = Field(default=None, description="true: every lead of the workspace.")


class TargetIn(WireModel):
    target: LeadTarget = Field(
        description=(
            'Which leads: exactly one of {"ids": [...]}, {"listId": "..."}, {"filter": '
            '{list_leads filters}} or {"all": true}.'
        )
    )


class ListTargetIn(TargetIn):
    list_id: Id = Field(description="The id of the lead list (from list_lists).")


class LabelTargetIn(TargetIn):
    label_id: Id = Field(description="The id of the label (from list_labels).")


class SuppressTargetIn(TargetIn):
    reason: str | None = Field(
        default=None,
        max_length=200,
        description=("Why they are suppressed, kept with each entry (optional)."),
    )


class Deleted(WireModel):
    deleted: int


class Added(WireModel):
    added: int


class Removed(WireModel):
    removed: int


class Labeled(WireModel):
    labeled: int


class Suppressed(WireModel):
    suppressed: int
