"""Wire models of the analytics (spec: "Analytics overview", `/campaigns/stats`, `/campaigns/analytics`,
`/campaigns/{id}/breakdown`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, WithJsonSchema

from outreach_core.kernel.wire import WireModel
from outreach_core.targets.schemas import Id

PERIODS = (7, 30, 90)


def _one_of_the_periods(value: int) -> int:
    if value not in PERIODS:
        raise ValueError("days must be 7, 30 or 90")
    return value


Days = Annotated[
    int, AfterValidator(_one_of_the_periods), WithJsonSchema({"type": "integer", "enum": list(PERIODS)})
]
"""7, 30 or 90 (an integer; from a query string too)."""
CHART = Field(
    default=False,
    description="MCP only: also return a PNG chart of the answer (an image content) to show the person.",
)


class OverviewQuery(WireModel):
    days: Days = Field(
        default=30, description="The period: the last 7, 30 or 90 calendar days, today included."
    )
    chart: bool = CHART


class StatsQuery(WireModel):
    days: Days = Field(
        default=30, description="The period: the last 7, 30 or 90 calendar days, today included."
    )
    campaign_id: Id | None = Field(default=None, description="One campaign; all campaigns when absent.")
    chart: bool = CHART


class CampaignAnalyticsQuery(WireModel):
    days: Days = Field(
        default=30, description="The period: the last 7, 30 or 90 calendar days, today included."
    )
    chart: bool = CHART


class BreakdownQuery(WireModel):
    chart: bool = CHART


class Counts(WireModel):
    """Counts of a period (`positive`: replies whose thread is labeled positive now)."""

    sent: int = 0
    replied: int = 0
    positive: int = 0
    bounced: int = 0
    opened: int = 0
    won: int = 0


class DayCounts(WireModel):
    date: str = Field(description="YYYY-MM-DD, a calendar day in the workspace time zone.")
    sent: int = 0
    replied: int = 0
    positive: int = 0
    bounced: int = 0
    opened: int = 0


class Sentiment(WireModel):
    """Replies by the type of the label their thread carries now (unlabeled replies are in none)."""

    positive: int = 0
    negative: int = 0
    neutral: int = 0
    warning: int = 0


class MailboxProblem(WireModel):
    id: str
    email: str
    status: str
    reason: str | None = None


class MailboxHealth(WireModel):
    total: int = Field(description="Connected mailboxes (paused ones left out).")
    healthy: int = Field(description="Active and reading their inbox without errors.")
    problems: list[MailboxProblem]


class CountryReplies(WireModel):
    code: str = Field(description="ISO 3166-1 alpha-2.")
    replies: int


class Overview(WireModel):
    days: int
    timezone: str
    series: list[DayCounts]
    totals: Counts
    previous: Counts = Field(description="The same counts for the period just before, of the same length.")
    tracks_opens: bool
    mailboxes: MailboxHealth
    sentiment: Sentiment
    heatmap: list[list[int]] = Field(
        description="Replies by weekday (7 rows, Monday first) and hour (24 columns), in each lead's own "
        "time zone (the workspace's when the lead's is unknown)."
    )
    countries: list[CountryReplies]
    replies_without_country: int
    sending: bool = Field(description="Something has ever been sent from this workspace.")


class CampaignStats(WireModel):
    days: int
    timezone: str
    series: list[DayCounts]
    totals: Counts
    tracks_opens: bool = Field(description="Some campaign in scope tracks opens.")


class Rates(WireModel):
    sent: int = 0
    replied: int = 0
    positive: int = 0
    bounced: int = 0
    opened: int = 0
    reply_rate: float = Field(default=0.0, description="replied / sent, 0 to 1.")
    positive_rate: float = Field(default=0.0, description="positive / sent, 0 to 1.")
    bounce_rate: float = Field(default=0.0, description="bounced / sent, 0 to 1.")


class CampaignRow(Rates):
    campaign_id: str
    name: str


class MailboxRow(Rates):
    mailbox_id: str | None
    email: str | None


class EspRow(Rates):
    esp: str


class CampaignAnalytics(WireModel):
    days: int
    by_campaign: list[CampaignRow]
    by_mailbox: list[MailboxRow]
    by_esp: list[EspRow]
    sentiment: Sentiment


class VariantRow(Rates):
    variant_id: str | None
    name: str = Field(description="A, B, C ... in the step's order.")
    subject: str | None = None


class Winner(WireModel):
    variant_id: str | None
    metric: Literal["replyRate", "positiveRate"]
    lift: float | None = Field(
        description="Relative lift over the runner-up (0.25 = 25 % better); null from 0."
    )
    confidence: float = Field(description="1 - p-value of the two-proportion z-test against the runner-up.")


class StepRow(WireModel):
    step: int = Field(description="Position in the sequence, 0 = the first email.")
    variants: list[VariantRow]
    winner: Winner | None
    reason: str | None = Field(description="Why there is no winner (null when there is one).")


class Breakdown(WireModel):
    campaign_id: str
    steps: list[StepRow]
    by_mailbox: list[MailboxRow]
    by_esp: list[EspRow]
    sentiment: Sentiment


class CampaignLeadExport(WireModel):
    """The campaign's leads as the CSV export lists them."""

    rows: list[list[str]]
