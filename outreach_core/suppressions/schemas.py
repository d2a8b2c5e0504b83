"""Wire models of the suppression list (not shown in the spec; see docs/lists-labels-suppressions.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import Timestamp, WireModel

MAX_ENTRIES = 10_000
Entry = Annotated[str, StringConstraints(max_length=1000)]
Entries = Annotated[
    list[Entry],
    Field(
        min_length=1,
        max_length=MAX_ENTRIES,
        description="Email addresses and/or whole domains (`example.com` or `@example.com`), 1 to 10,000.",
    ),
]


class Suppression(WireModel):
    id: str
    value: str = Field(description="The normalised address or domain.")
    kind: Literal["email", "domain"]
    reason: str | None
    created_at: Timestamp


class ListSuppressionsQuery(WireModel):
    search: str | None = Field(default=None, max_length=200, description="Part of an address or domain.")
    page: int = Field(default=1, ge=1, le=100_000, description="Page number, from 1.")
    page_size: int = Field(default=50, ge=10, le=200, description="Items per page, 10 to 200.")


class SuppressionPage(WireModel):
    suppressions: list[Suppression] = Field(description="Newest first.")
    total: int
    page: int
    page_size: int


class AddSuppressionsIn(WireModel):
    entries: Entries
    reason: str | None = Field(
        default=None,
        max_length=200,
        description=("Why they are suppressed, kept with each entry (optional)."),
    )


class SuppressionsAdded(WireModel):
    added: int = Field(description="Entries newly on the list.")
    existing: int = Field(description="Entries that were on the list already (kept as they were).")
    invalid: int = Field(description="Entries that are neither an email address nor a domain (ignored).")
    invalid_entries: list[str] = Field(description="The first 100 invalid entries, as given.")


class RemoveSuppressionsIn(WireModel):
    entries: Entries
