"""Wire models of lead lists (not shown in the spec; see docs/lists-labels-suppressions.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import NAME, Timestamp, WireModel

MAX_LISTS = 1_000
# 1 to 120 characters, not blank, no control characters; stored without surrounding spaces.
ListName = Annotated[str, StringConstraints(min_length=1, max_length=120), NAME]


class LeadList(WireModel):
    id: str
    name: str
    created_at: Timestamp
    leads: int = Field(description="How many leads are on the list.")


class LeadLists(WireModel):
    lists: list[LeadList] = Field(description="Every list of the workspace, oldest first.")


class CreateListIn(WireModel):
    name: ListName = Field(description="Unique in the workspace.")


class UpdateListIn(WireModel):
    name: ListName = Field(description="Unique in the workspace.")
