"""Wire models of the Campaigns section of the spec (analytics and AI writing come later)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, get_args

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from outreach_core.kernel.wire import NAME, DateText, Omittable, Timestamp, Timezone, WireModel
from outreach_core.targets.schemas import Id

CampaignStatus = Literal["draft", "running", "paused", "completed"]
CAMPAIGN_STATUSES: tuple[str, ...] = get_args(CampaignStatus)
CampaignLeadStatus = Literal[
    "not_contacted",
    "contacted",
    "completed",
    "replied",
    "rescheduled",
    "unsubscribed",
    "bounced",
    "skipped",
    "stopped",
]
CAMPAIGN_LEAD_STATUSES: tuple[str, ...] = get_args(CampaignLeadStatus)
FINISHED_LEAD_STATUSES = ("completed", "replied", "unsubscribed", "bounced", "skipped", "stopped")
"""A campaign lead in one of these gets no more email from the campaign."""

MAX_STEPS = 10
MAX_VARIANTS = 5
MAX_SUBJECT = 500
MAX_BODY = 50_000
MINUTES_A_DAY = 1440


CampaignName = Annotated[str, StringConstraints(min_length=1, max_length=200), NAME]
Minutes = Annotated[int, Field(ge=0, le=MINUTES_A_DAY)]
Subject = Annotated[str, StringConstraints(max_length=MAX_SUBJECT)]
Body = Annotated[str, StringConstraints(max_length=MAX_BODY)]
Weight = Annotated[int, Field(ge=1, le=100, description="Relative share of leads among active variants.")]
WaitDays = Annotated[int, Field(ge=0, le=365, description="Days after the previous email.")]

# --- the campaign ----------------------------------------------------------------------------------------


class Variant(WireModel):
    id: str
    label: str = Field(description="A, B, C ... in the order of the step.")
    subject: str
    body: str = Field(description="Sanitized HTML as saved.")
    weight: int
    active: bool


class Step(WireModel):
    id: str
    position: int = Field(description="0 for the first email.")
    wait_days: int = Field(description="Days after the previous email (ignored for the first).")
    same_thread: bool = Field(description="Sent as a reply in the thread of the first email.")
    variants: list[Variant]


class CampaignWorkspace(WireModel):
    id: str
    name: str
    timezone: str
    unsubscribe_mode: Literal["link", "reply_text"]


class Campaign(WireModel):
    id: str
    name: str
    status: CampaignStatus
    paused_reason: str | None
    timezone_fallback: str
    window_start: int
    window_end: int
    days: int
    daily_cap: int | None
    bounce_threshold: float | None
    esp_matching: bool
    stop_on_reply: bool
    track_clicks: bool
    track_opens: bool
    start_on: str | None
    end_on: str | None
    stop_for_company: bool
    skip_risky: bool
    started_at: Timestamp | None
    completed_at: Timestamp | None
    created_at: Timestamp
    updated_at: Timestamp
    steps: list[Step]
    mailbox_ids: list[str]
    lead_counts: dict[str, int] = Field(description="Campaign leads by progress status, plus `total`.")
    reached: list[int] = Field(description="Leads that were sent each step; index = step position.")
    active_mailboxes: int
    workspace: CampaignWorkspace


class CampaignListItem(WireModel):
    id: str
    name: str
    status: CampaignStatus
    paused_reason: str | None
    steps: int
    mailboxes: int
    lead_counts: dict[str, int] = Field(description="Campaign leads by progress status, plus `total`.")
    started_at: Timestamp | None
    created_at: Timestamp
    updated_at: Timestamp


class CampaignList(WireModel):
    campaigns: list[CampaignListItem] = Field(description="Newest first.")


class ListCampaignsQuery(WireModel):
    status: list[CampaignStatus] | None = Field(
        default=None, description=("Only campaigns in any of these states.")
    )


class CreateCampaignIn(WireModel):
    name: CampaignName = Field(
        default="New campaign", description=("The campaign's name (default “New campaign”).")
    )


class CreatedId(WireModel):
    id: str


class UpdateCampaignIn(WireModel):
    name: Omittable[CampaignName] = Field(default=None, description="The campaign's new name.")
    mailbox_ids: Omittable[Annotated[list[Id], Field(max_length=1000)]] = Field(
        default=None, description="Replaces the campaign's mailboxes."
    )
    timezone_fallback: Omittable[Timezone] = Field(
        default=None,
        description=(
            "IANA time zone (e.g. Europe/Berlin) of the sending window for leads whose own time zone "
            "is unknown."
        ),
    )
    window_start: Omittable[Minutes] = Field(
        default=None, description="Minutes after midnight; before windowEnd (the stored one when not given)."
    )
    window_end: Omittable[Minutes] = Field(
        default=None, description="Minutes after midnight; after windowStart (the stored one when not given)."
    )
    days: Omittable[Annotated[int, Field(ge=1, le=127)]] = Field(
        default=None,
        description=(
            "Sending days as a bitmask from 1 to 127: 1 Monday, 2 Tuesday, 4 Wednesday, 8 Thursday, 16 "
            "Friday, 32 Saturday, 64 Sunday (31 = weekdays)."
        ),
    )
    daily_cap: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        default=None, description="First emails a day for the campaign; null = mailbox limits only."
    )
    bounce_threshold: Annotated[float, Field(ge=0, le=100)] | None = Field(
        default=None, description="Percent; null = the workspace default."
    )
    esp_matching: Omittable[bool] = Field(
        default=None,
        description=(
            "true: each lead is sent from a mailbox on the same email provider as the lead's, where "
            "the campaign has one."
        ),
    )
    stop_on_reply: Omittable[bool] = Field(
        default=None, description=("true: a lead who replies gets no more emails of this campaign.")
    )
    track_clicks: Omittable[bool] = Field(
        default=None,
        description=("true: links in the emails are counted when clicked (through the link domain)."),
    )
    track_opens: Omittable[bool] = Field(
        default=None, description=("true: opens are counted with a tracking pixel.")
    )
    start_on: DateText | None = Field(default=None, description="null = from the launch.")
    end_on: DateText | None = Field(
        default=None,
        description="null = no end date. Not before startOn (the stored one when not given).",
    )
    stop_for_company: Omittable[bool] = Field(
        default=None,
        description=(
            "true: when one lead of a company replies, the other leads of that company get no more emails."
        ),
    )
    skip_risky: Omittable[bool] = Field(
        default=None, description=("true: leads whose verification says risky or catch-all are skipped.")
    )


# --- sequence --------------------------------------------------------------------------------------------


class StepPatch(WireModel):
    wait_days: Omittable[WaitDays] = Field(
        default=None, description=("Days after the previous email, 0 to 365 (ignored for the first email).")
    )
    same_thread: Omittable[bool] = Field(
        default=None,
        description=(
            "true: sent as a reply in the thread of the first email (same subject); false: a new "
            "thread with the variant's own subject."
        ),
    )


class VariantPatch(WireModel):
    subject: Omittable[Subject] = Field(
        default=None, description=("The subject line (spintax and {{variables}} allowed).")
    )
    body: Omittable[Body] = Field(
        default=None,
        description=(
            "The email's body: plain text (blank lines split paragraphs) or simple HTML, sanitized on save."
        ),
    )
    weight: Omittable[Weight] = Field(
        default=None,
        description=(
            "The variant's share of the step's sends, relative to the step's other active variants."
        ),
    )
    active: Omittable[bool] = Field(
        default=None,
        description=("false: the variant is not sent (a step keeps at least one active variant)."),
    )


class SavedVariant(WireModel):
    ok: Literal[True] = True
    body: str = Field(description="The body as saved (sanitized HTML).")


class AddStepIn(WireModel):
    wait_days: WaitDays = 3
    same_thread: bool = Field(
        default=True,
        description=(
            "true: sent as a reply in the thread of the first email (same subject); false: a new "
            "thread with the variant's own subject."
        ),
    )


class AddVariantIn(WireModel):
    copy_from: Id | None = Field(default=None, description="A variant of this campaign to copy.")


class MoveStepIn(WireModel):
    to: int = Field(
        ge=0,
        le=MAX_STEPS - 1,
        description="The new position, 0 for the first email; past the last step = the end.",
    )


class VariantIn(WireModel):
    id: Id | None = Field(default=None, description="Keep this variant's id (and its statistics).")
    subject: Subject = Field(default="", description="The subject line (spintax and {{variables}} allowed).")
    body: Body = Field(
        default="",
        description=(
            "The email's body: plain text (blank lines split paragraphs) or simple HTML, sanitized on save."
        ),
    )
    weight: Weight = 1
    active: bool = Field(default=True, description="false: the variant is not sent.")


def _an_active_variant(schema: dict[str, Any]) -> None:
    """The document states `_one_active`: some variant does not say `active: false`."""
    schema["properties"]["variants"]["contains"] = {
        "not": {"required": ["active"], "properties": {"active": {"const": False}}}
    }


class StepIn(WireModel):
    model_config = ConfigDict(json_schema_extra=_an_active_variant)

    id: Id | None = Field(default=None, description="Keep this step's id.")
    wait_days: WaitDays = 3
    same_thread: bool = Field(
        default=True,
        description=(
            "true: sent as a reply in the thread of the first email (same subject); false: a new "
            "thread with the variant's own subject."
        ),
    )
    variants: Annotated[list[VariantIn], Field(min_length=1, max_length=MAX_VARIANTS)] = Field(
        description=("The step's A/B variants (1 to 5), at least one of them active.")
    )

    @model_validator(mode="after")
    def _one_active(self) -> Self:
        if not any(v.active for v in self.variants):
            raise ValueError("a step needs at least one active variant")
        return self


class SequenceIn(WireModel):
    steps: Annotated[list[StepIn], Field(min_length=1, max_length=MAX_STEPS)] = Field(
        description=(
            "The whole sequence in order (1 to 10 steps), each with waitDays, sameThread and 1 to 5 variants."
        )
    )


# --- campaign leads --------------------------------------------------------------------------------------


def _some_leads(schema: dict[str, Any]) -> None:
    """The document states `_something`: a non-empty list of lists or leads, or all leads."""
    schema["anyOf"] = [
        {"required": ["listIds"], "properties": {"listIds": {"minItems": 1}}},
        {"required": ["leadIds"], "properties": {"leadIds": {"minItems": 1}}},
        {"required": ["allLeads"], "properties": {"allLeads": {"const": True}}},
    ]


class AddCampaignLeadsIn(WireModel):
    """Name some leads: a non-empty `listIds` or `leadIds`, or `allLeads: true` (any combination)."""

    model_config = ConfigDict(json_schema_extra=_some_leads)

    list_ids: Omittable[Annotated[list[Id], Field(max_length=100)]] = Field(
        default=None, description=("Ids of lead lists whose leads are added (up to 100).")
    )
    lead_ids: Omittable[Annotated[list[Id], Field(max_length=10_000)]] = Field(
        default=None, description=("Ids of single leads to add (up to 10,000).")
    )
    all_leads: bool = Field(default=False, description="Every lead in the workspace.")

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not (self.list_ids or self.lead_ids or self.all_leads):
            raise ValueError("give listIds, leadIds or allLeads: true")
        return self


class CampaignLeadsAdded(WireModel):
    matched: int = Field(description="Distinct leads selected.")
    added: int
    already_in: int
    suppressed: int = Field(description="Unsubscribed, bounced or on the suppression list.")
    invalid: int = Field(description="Verification said the address does not exist.")
    risky: int = Field(description="Risky or catch-all, left out because the campaign skips risky leads.")


class RemoveCampaignLeadsIn(WireModel):
    ids: Annotated[list[Id], Field(min_length=1, max_length=10_000, description="Campaign lead ids.")]


class ListCampaignLeadsQuery(WireModel):
    status: list[CampaignLeadStatus] | None = Field(
        default=None, description=("Only campaign leads in any of these progress states.")
    )
    search: Annotated[str, StringConstraints(max_length=200)] | None = Field(
        default=None, description=("Part of the lead's email address, name or company.")
    )
    page: int = Field(default=1, ge=1, le=100_000, description="Page number, from 1.")
    page_size: int = Field(default=50, ge=10, le=200, description="Items per page, 10 to 200.")


class CampaignLead(WireModel):
    id: str = Field(description="The campaign lead id (not the lead id).")
    lead_id: str
    email: str
    first_name: str | None
    last_name: str | None
    company: str | None
    status: CampaignLeadStatus
    reason: str | None
    step: int = Field(description="Emails sent so far; the next step's position.")
    mailbox_id: str | None
    next_at: Timestamp | None
    last_sent_at: Timestamp | None
    added_at: Timestamp
    # click and open tracking (docs/tracking.md): over every email the lead was sent in this campaign
    opened_at: Timestamp | None = Field(
        default=None, description="First time a person opened one of the lead's emails (trackOpens)."
    )
    open_count: int = Field(default=0, description="Opens by a person, over all of the lead's emails.")
    clicked_at: Timestamp | None = Field(
        default=None,
        description="First time a person clicked a link in one of the lead's emails (trackClicks).",
    )
    click_count: int = Field(default=0, description="Clicks by a person, over all of the lead's emails.")
    flagged_opens: int = Field(
        default=0,
        description="Opens not counted as a person's: HEAD requests, scanners, Apple Mail Privacy Protection "
        "(docs/tracking.md).",
    )
    flagged_clicks: int = Field(
        default=0,
        description="Clicks not counted as a person's: HEAD requests, scanners, clicks on delivery.",
    )


class CampaignLeadPage(WireModel):
    leads: list[CampaignLead]
    total: int
    total_exact: bool = Field(
        default=True,
        description="False when a search matched more than 10,000 of the campaign's leads: `total` is then"
        " 10,000, a lower bound. Keep paging while a page comes back full.",
    )
    page: int
    page_size: int


class Send(WireModel):
    id: str
    step: int
    step_id: str | None
    variant_id: str | None
    mailbox_id: str | None
    message_id: str
    to: str
    subject: str
    body: str = Field(description="The HTML part as sent.")
    text: str = Field(description="The plain-text part as sent.")
    status: Literal["sending", "sent", "retry", "failed", "bounced", "unknown"]
    error: str | None
    attempts: int
    created_at: Timestamp
    sent_at: Timestamp | None
    # click and open tracking (docs/tracking.md)
    opened_at: Timestamp | None = Field(description="First time a person opened this email (trackOpens).")
    open_count: int = Field(description="Opens by a person.")
    clicked_at: Timestamp | None = Field(
        description="First time a person clicked a link of it (trackClicks)."
    )
    click_count: int = Field(description="Clicks by a person.")
    flagged_opens: int = Field(
        description="Opens not counted as a person's: HEAD requests, scanners, Apple Mail Privacy Protection."
    )
    flagged_clicks: int = Field(
        description="Clicks not counted as a person's: HEAD requests, scanners, clicks on delivery."
    )


class SendList(WireModel):
    sends: list[Send]


# --- preview, checklist, lifecycle -----------------------------------------------------------------------


class PreviewQuery(WireModel):
    lead_id: Id | None = Field(
        default=None,
        description=("The lead to preview the emails for; default the first lead added to the campaign."),
    )


class PreviewLead(WireModel):
    id: str
    email: str
    first_name: str | None
    last_name: str | None
    company: str | None


class PreviewSender(WireModel):
    mailbox_id: str
    email: str
    name: str | None


class PreviewEmail(WireModel):
    step_id: str
    position: int
    variant_id: str
    variant_label: str
    wait_days: int
    same_thread: bool
    subject: str
    body: str = Field(description="The HTML part exactly as it will be sent.")
    text: str = Field(description="The plain-text alternative.")
    unknown_variables: list[str]


class Preview(WireModel):
    lead: PreviewLead | None
    sender: PreviewSender | None
    unsubscribe: str = Field(description="The unsubscribe link, or the reply-to-unsubscribe line.")
    emails: list[PreviewEmail]
    picker: list[PreviewLead] = Field(description="Campaign leads to preview (the first 20).")
    picker_total: int


class ChecklistItem(WireModel):
    id: str
    label: str
    required: bool = Field(description="A failing required item blocks launch; warnings are advice.")
    ok: bool
    message: str | None
    details: list[str]


class Checklist(WireModel):
    items: list[ChecklistItem]
    can_launch: bool


# --- the send forecast (issue 28, item 7; docs/forecast.md) ------------------------------------------------

ForecastLimit = Literal[
    "noMailboxes", "startOn", "mailboxLimits", "rampUp", "window", "dailyCap", "plan", "endOn", "horizon"
]


class ForecastDay(WireModel):
    date: str = Field(description="A calendar day (YYYY-MM-DD) in the campaign's timezoneFallback.")
    first_emails: int = Field(description="First emails the sender will send that day.")
    follow_ups: int = Field(description="Follow-ups (emails 2, 3 ...) the sender will send that day.")


class Forecast(WireModel):
    days: list[ForecastDay] = Field(
        description="Every day from the first sending day to the last, days without sending included."
    )
    last_first_email_on: str | None = Field(
        description="The day the last waiting lead gets its first email; null when none will."
    )
    last_email_on: str | None = Field(
        description="The day the last email of the sequence goes out; null when nothing will."
    )
    limited_by: list[ForecastLimit] = Field(
        description="What holds sending back, the limit that binds on most days first: noMailboxes, startOn, "
        "mailboxLimits, rampUp (the ramp-up keeps limits below dailyLimit), window (its hours divided by the "
        "mailboxes' gaps), dailyCap, plan (the plan's monthly emails), endOn (leads left without all their "
        "emails), horizon (more than a year of sending)."
    )
    timezone: str = Field(description="The time zone of the days: the campaign's timezoneFallback.")
    leads: int = Field(description="Leads waiting for an email now, counted in the forecast.")
    unfinished: int = Field(description="Of those, leads still waiting for an email when sending ends.")
    message: str = Field(description="The forecast in one sentence.")


class Launched(WireModel):
    status: CampaignStatus
    items: list[ChecklistItem]
    next_send_at: Timestamp | None = Field(
        description="When the first waiting lead can get its next email: now when a lead is inside its "
        "sending window, else when the window next opens in its time zone (not before startOn or a "
        "follow-up's waitDays). Mailbox gaps and limits may make it later. Null when no lead waits."
    )
    message: str = Field(description="When sending starts, in words, in the lead's time zone and in UTC.")
    forecast: Forecast = Field(description="What the sender will send, day by day (as forecast_campaign).")


class StatusOut(WireModel):
    status: CampaignStatus
