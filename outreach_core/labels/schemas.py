"""Wire models of labels (not shown in the spec; see docs/lists-labels-suppressions.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from outreach_core.kernel.wire import NAME, Omittable, Timestamp, WireModel
from outreach_core.targets.schemas import Id

MAX_LABELS = 500
LabelType = Literal["positive", "negative", "neutral", "warning"]
# 1 to 60 characters, not blank, no control characters; stored without surrounding spaces.
LabelName = Annotated[str, StringConstraints(min_length=1, max_length=60), NAME]
Color = Annotated[str, StringConstraints(pattern=r"^#[0-9a-fA-F]{6}$"), AfterValidator(str.lower)]
Days = Annotated[int, Field(ge=1, le=365)]


class ApplyLabel(WireModel):
    label_id: Id = Field(description="The label to apply; another label of this workspace.")
    after_days: Days = Field(description="Days after this label was put on the lead, 1 to 365.")


class LabelTriggers(WireModel):
    """What happens when the label is put on a lead (by `label_leads` or a timer). Every trigger is off by
    default; they run only for leads that did not carry the label yet."""

    suppress: bool = Field(
        default=False, description="Add the lead's address to the suppression list (it is never emailed)."
    )
    move_to_list_id: Id | None = Field(
        default=None, description="Put the lead on this list and take it off every other list."
    )
    remove_after_days: Days | None = Field(
        default=None, description="Take this label off the lead again after this many days (1 to 365)."
    )
    apply_label: ApplyLabel | None = Field(
        default=None, description="Put another label on the lead after some days (this one stays)."
    )


class Label(WireModel):
    id: str
    name: str
    type: LabelType = Field(description="Used for reply sentiment in analytics.")
    color: str | None = Field(description="`#rrggbb`, or null.")
    triggers: LabelTriggers
    leads: int = Field(description="How many leads carry the label.")
    created_at: Timestamp


class Labels(WireModel):
    labels: list[Label] = Field(description="Every label of the workspace, oldest first.")


class CreateLabelIn(WireModel):
    name: LabelName = Field(description="Unique in the workspace.")
    type: LabelType = Field(
        default="neutral",
        description=(
            "positive, negative, neutral or warning: what a reply with this label counts as in "
            "analytics (default neutral)."
        ),
    )
    color: Color | None = Field(default=None, description="`#rrggbb`; leave out for none.")
    triggers: LabelTriggers = Field(
        default_factory=LabelTriggers,
        description=("What happens when the label is put on a lead (all off by default)."),
    )


class UpdateLabelIn(WireModel):
    name: Omittable[LabelName] = Field(default=None, description="Unique in the workspace.")
    type: Omittable[LabelType] = Field(
        default=None,
        description=(
            "positive, negative, neutral or warning: what a reply with this label counts as in analytics."
        ),
    )
    color: Color | None = Field(default=None, description="`#rrggbb`; null removes the color.")
    triggers: Omittable[LabelTriggers] = Field(
        default=None, description="Replaces every trigger; `{}` switches them all off."
    )
