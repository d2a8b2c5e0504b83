"""Wire models of the lead import (`POST /leads/import`, `GET /leads/imports`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from outreach_core.leads.schemas import Custom, LeadFields
from outreach_core.targets.schemas import Id
from outreach_core.wire import NAME, SINGLE_LINE, ExactlyOne, Omittable, Timestamp, WireModel

MAX_IMPORT_ROWS = 5_000


class ImportRow(LeadFields):
    email: str | None = Field(
        default=None, description="Rows without a valid address are counted as invalid."
    )
    custom: Custom | None = None


ROW_KEYS: dict[str, str] = {(field.alias or name): name for name, field in ImportRow.model_fields.items()}
"""An import row's keys on the wire (camelCase) -> in storage (snake_case, the `leads` columns)."""


def stored_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """An import row in storage form, as `import_queue` holds it: snake_case keys (`first_name`), from a row
    in either form (rows queued before the storage form was introduced are in wire form, `firstName`)."""
    return {ROW_KEYS.get(key, key): value for key, value in row.items()}


ListName = Annotated[str, StringConstraints(min_length=1, max_length=120), NAME]


class ImportList(ExactlyOne):
    """An existing list (`id`) or a new one (`name`) that every imported lead joins."""

    id: Omittable[Id] = None
    name: Omittable[ListName] = None


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
