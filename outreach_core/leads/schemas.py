"""Wire models of the Leads section of the spec."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import COUNTRY_CODE, Omittable, SchemaPattern, Timestamp, WireModel
from outreach_core.targets.schemas import CountrySource, Esp, Id, LeadFilter, LeadStatus, VerifyStatus

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

    first_name: Text200 | None = Field(default=None, description="The lead's first name.")
    last_name: Text200 | None = Field(default=None, description="The lead's last name.")
    company: Text300 | None = Field(default=None, description="The lead's company.")
    title: Text300 | None = Field(default=None, description="The lead's job title.")
    website: Text2000 | None = Field(default=None, description="The company's website.")
    phone: Text64 | None = Field(default=None, description="The lead's phone number.")
    linkedin: Text2000 | None = Field(default=None, description="The lead's LinkedIn profile URL.")
    country: Text64 | None = Field(
        default=None,
        description=("The lead's country: an ISO 3166-1 alpha-2 code such as DE, or an English name."),
    )
    timezone: Text64 | None = Field(
        default=None,
        description=(
            "The lead's IANA time zone (e.g. Europe/Berlin): campaigns send in the lead's own window."
        ),
    )


LEAD_FIELDS: tuple[str, ...] = tuple(LeadFields.model_fields)
"""A lead's own optional fields by their snake_case names (the columns of the same names): what create,
update and import rows set, what templates read besides `email` and `custom`."""


_WS = (
    "[\\u0009-\\u000d\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
)
_NOT_WS = "[^" + _WS[1:]
_MAILTO = "(?:[Mm][Aa][Ii][Ll][Tt][Oo]:)?"
_ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
LEAD_EMAIL = SchemaPattern(
    f"^{_WS}*{_MAILTO}{_ATOM}(?:\\.{_ATOM})*@(?:{_LABEL}\\.)+[A-Za-z]{{2,63}}{_WS}*$",
    also=(f"^{_WS}*{_MAILTO}[^@]{{1,64}}@", f"^{_WS}*{_MAILTO}{_NOT_WS}{{1,254}}{_WS}*$"),
)
"""What `normalize_email` takes on its plain-ASCII path (the form of nearly every address in a lead list):
surrounding whitespace and a `mailto:` prefix dropped, any case, at most 64 characters before the @ and 254
in all. Internationalised addresses are accepted too (see the field's description)."""

Country = Annotated[
    str,
    StringConstraints(max_length=64),
    COUNTRY_CODE,
    Field(
        description="ISO 3166-1 alpha-2 code such as DE. English names and common spellings (Germany, UK, "
        "USA, lower case) are accepted too and stored as the code; blank or null = none."
    ),
]


class CreateLeadIn(LeadFields):
    email: Annotated[str, LEAD_EMAIL] = Field(
        max_length=320,
        description="Trimmed and lower-cased; a `mailto:` prefix is dropped. Internationalised addresses "
        "(a non-ASCII domain or local part) are accepted when valid (RFC 6531), though the pattern shows "
        "only the ASCII form.",
    )
    country: Country | None = Field(
        default=None,
        description=(
            "ISO 3166-1 alpha-2 code such as DE; English names (Germany, UK, USA) are accepted and "
            "stored as the code."
        ),
    )
    custom: Custom = Field(
        default_factory=dict,
        description=(
            "Your own fields: up to 50 names (1 to 64 characters) with text, number, true/false or "
            "null values."
        ),
    )
    list_id: Id | None = Field(default=None, description="A lead list the new lead joins.")


class UpdateLeadIn(LeadFields):
    country: Country | None = Field(
        default=None,
        description=("ISO 3166-1 alpha-2 code such as DE; English names are accepted too; null clears it."),
    )
    custom: Custom | None = Field(default=None, description="Replaces the whole object; null empties it.")
    status: Omittable[LeadStatus] = Field(
        default=None, description=("The lead's new status (see the tool description for which may be set).")
    )


class MarkWonIn(WireModel):
    value: float | None = Field(
        default=None, ge=0, le=1e12, description=("The deal's value, 0 or more (optional).")
    )
    campaign_id: Id | None = Field(
        default=None, description=("The campaign that won the lead, one of your campaigns (optional).")
    )


SortField = Literal["createdAt", "email", "name", "company"]


class ListLeadsQuery(LeadFilter):
    page: int = Field(default=1, ge=1, le=100_000, description="Page number, from 1.")
    page_size: int = Field(default=50, ge=10, le=200, description="Items per page, 10 to 200.")
    sort: SortField = Field(default="createdAt", description="The field to sort by.")
    dir: Literal["asc", "desc"] = Field(default="desc", description="Sort order: asc or desc.")


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
    list_id: Id | None = Field(default=None, description="Count only the leads of this list.")


class LeadStats(WireModel):
    total: int
    status: dict[str, int] = Field(description="Leads by status; every status is present.")
    verify: dict[str, int] = Field(description="Leads by verification status; every value is present.")
    esp: dict[str, int] = Field(description="Leads by email provider; every value is present.")
    importing: bool = Field(description="An import is still checking domains or verifying.")
    verifier_enabled: bool = Field(
        description="A verifier API is configured; without it only local checks run."
    )
