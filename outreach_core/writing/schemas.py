"""Wire models of AI writing (`POST /campaigns/{id}/write`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from outreach_core.campaigns.schemas import MAX_STEPS, Campaign
from outreach_core.kernel.wire import WireModel
from outreach_core.targets.schemas import Id

Mode = Literal["sequence", "rewrite", "shorter", "angle"]
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=300, strip_whitespace=True)]


def _modes(schema: dict[str, Any]) -> None:
    """The document states what each mode needs; the model checks the same rules (`_needs`)."""
    text = {"type": "string", "pattern": "\\S"}  # not null, not blank
    schema["oneOf"] = [
        {"properties": {"mode": {"const": "sequence"}}},
        {
            "properties": {"mode": {"enum": ["rewrite", "shorter"]}, "variantId": text},
            "required": ["variantId"],
        },
        {
            "properties": {"mode": {"const": "angle"}, "variantId": text, "angle": text},
            "required": ["variantId", "angle"],
        },
    ]


class WriteIn(WireModel):
    model_config = ConfigDict(json_schema_extra=_modes)

    mode: Mode = Field(
        description="sequence: draft a whole sequence of `steps` emails; rewrite: a new version of one "
        "variant; shorter: a shorter version of it; angle: a version around `angle` (and `persona`)."
    )
    steps: int = Field(
        default=3, ge=1, le=MAX_STEPS, description="sequence mode: how many emails to draft, 1 to 10."
    )
    variant_id: Id | None = Field(
        default=None, description="The variant to redraft; required for rewrite, shorter and angle."
    )
    angle: ShortText | None = Field(
        default=None, description="angle mode: the angle to write around (a pain, a trigger, an outcome)."
    )
    persona: ShortText | None = Field(
        default=None, description="The reader to write for (a role or situation); any mode."
    )

    @model_validator(mode="after")
    def _needs(self) -> Self:
        if self.mode != "sequence" and self.variant_id is None:
            raise ValueError(f"variantId is required in {self.mode} mode")
        if self.mode == "angle" and self.angle is None:
            raise ValueError("angle is required in angle mode")
        return self


class WrittenEmail(WireModel):
    step_id: str = Field(description="The step the email was saved in.")
    variant_id: str = Field(description="The new variant holding it.")
    step: int = Field(description="The step's position, 0 for the first email.")
    label: str = Field(description="The variant's letter within its step (A, B, C ...).")
    subject: str
    body: str = Field(description="As saved (sanitized HTML).")
    active: bool = Field(description="False when added to a running campaign: review it, then activate it.")
    problems: list[str] = Field(description="What the content checklist found in this email.")


class WriteResult(WireModel):
    campaign: Campaign
    created: list[WrittenEmail] = Field(description="The emails saved as new variants (or new steps).")
    skipped: list[str] = Field(
        description="Emails that had nowhere to go: the step already has 5 variants, the campaign has 10 "
        "steps, or a running campaign (new steps are only added while it is a draft or paused)."
    )
    problems: list[str] = Field(
        description="Why nothing was drafted, when the AI's answers could not be used (nothing is saved then "
        "and it does not count as an AI draft)."
    )
