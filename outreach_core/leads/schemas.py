"""Wire models of the Leads section of the spec."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints
from pydantic.json_schema import SkipJsonSchema

from outreach_core.targets.schemas import CountrySource, Esp, Id, LeadFilter, LeadStatus, VerifyStatus
from outreach_core.wire import NAME, SINGLE_LINE, ExactlyOne, Timestamp, WireModel

CustomValue = str | int | float | bool | None
CustomKey = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Custom = Annotated[dict[CustomKey, CustomValue], Field(max_length=50)]


Text64 = Annotated[str, StringConstraints(max_length=64)]
Text200 = Annotated[str, StringConstraints(max_length=200)]
Text300 = Annotated[str, StringConstraints(max_length=300)]
Text2000 = Annotated[str, StringConstraints(max_length=2000)]


class LabelRef(WireModel):
    id: str
    name: str


class ListRef(WireModel):
    id: str
    name: str


class Lead(WireModel):
    """A lead as listed."""

    id: str
    email: str
    first_name: str | None
    last_name: str | None
    company: str | None
    title: str | None
    country: str | None
    timezone: str | None
    esp: Esp
    mx_host: str | None
    verify_status: VerifyStatus
    verify_reason: str | None
    status: LeadStatus
    labels: list[LabelRef]
    created_at: Timestamp


class LeadDetail(Lead):
    """The single-lead form (get, create, update, mark won)."""

    country_source: CountrySource | None
    website: str | None
    phone: str | None
    linkedin: str | None
    custom: dict[str, CustomValue]
    lists: list[ListRef]
    verified_at: Timestamp | None
    updated_at: Timestamp | None


class LeadFields(WireModel):
    """Optional lead fields shared by create, update and import rows."""

    first_name: Text200 | None = None
    last_name: Text200 | None = None
    company: Text300 | None = None
    title: Text300 | None = None
    website: Text2000 | None = None
    phone: Text64 | None = None
    linkedin: Text2000 | None = None
    country: Text64 | None = None
    timezone: Text64 | None = None


class CreateLeadIn(LeadFields):
    email: str = Field(max_length=320)
    custom: Custom = Field(default_factory=dict)
    list_id: Id | None = None


class UpdateLeadIn(LeadFields):
    custom: Custom | None = None
    status: LeadStatus | None = None


class MarkWonIn(WireModel):
    value: float | None = Field(default=None, ge=0, le=1e12)
    campaign_id: Id | None = None


SortField = Literal["createdAt", "email", "name", "company"]


class ListLeadsQuery(LeadFilter):
    page: int = Field(default=1, ge=1, le=100_000)
    page_size: int = Field(default=50, ge=10, le=200)
    sort: SortField = "createdAt"
    dir: Literal["asc", "desc"] = "desc"


class LeadPage(WireModel):
    leads: list[Lead]
    total: int
    total_exact: bool = Field(
        default=True,
        description="False when a search matched more than 10,000 leads: `total` is then 10,000, a lower"
        " bound. Keep paging while a page comes back full.",
    )
    page: int
    page_size: int


class LeadStatsQuery(WireModel):
    list_id: Id | None = None


class LeadStats(WireModel):
    total: int
    status: dict[str, int] = Field(description="Leads by status; every status is present.")
    verify: dict[str, int] = Field(description="Leads by verification status; every value is present.")
    esp: dict[str, int] = Field(description="Leads by email provider; every value is present.")
    importing: bool = Field(description="An import is still checking domains or verifying.")
    verifier_enabled: bool = Field(
        description="A verifier API is configured; without it only local checks run."
    )


# --- import ------------------------------------------------------------------------------------------------

MAX_IMPORT_ROWS = 5_000


class ImportRow(LeadFields):
    email: str | None = Field(
        default=None, description="Rows without a valid address are counted as invalid."
    )
    custom: Custom | None = None


ListName = Annotated[str, StringConstraints(min_length=1, max_length=120), NAME]


class ImportList(ExactlyOne):
    """An existing list (`id`) or a new one (`name`) that every imported lead joins."""

    id: Id | SkipJsonSchema[None] = None
    name: ListName | SkipJsonSchema[None] = None


class ImportIn(WireModel):
    import_id: Id | None = Field(
        default=None, description="Omit on the first chunk; pass the returned id after."
    )
    file_name: Annotated[str, StringConstraints(max_length=300), SINGLE_LINE] | None = None
    target_list: ImportList | None = Field(default=None, alias="list")
    existing: Literal["skip", "update"] = "skip"
    verify: bool = False
    client_invalid: int = Field(default=0, ge=0, le=10_000_000)
    client_duplicates: int = Field(default=0, ge=0, le=10_000_000)
    rows: list[ImportRow] = Field(description="Up to 5,000 rows per call.")
    final: bool = False


class LeadImport(WireModel):
    id: str
    file_name: str | None
    list_id: str | None
    list_name: str | None
    status: Literal["importing", "enriching", "done", "failed"]
    verify: bool
    rows: int
    created: int
    updated: int
    skipped: int
    duplicates: int
    suppressed: int
    invalid: int
    over_limit: int = Field(description="New addresses not imported: the plan's contacts limit was reached.")
    queued: int = Field(description="Rows received and not merged yet; the other counters are final at 0.")
    undeliverable: int
    created_at: Timestamp
    finished_at: Timestamp | None
    enriched_at: Timestamp | None


class LeadImports(WireModel):
    imports: list[LeadImport]
