"""Wire models of the lead import (`POST /leads/import`, `GET /leads/imports`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, PrivateAttr, StringConstraints, ValidationError

from outreach_core.kernel.wire import (
    NAME,
    SINGLE_LINE,
    ExactlyOne,
    Omittable,
    Timestamp,
    WireModel,
    unstorable,
)
from outreach_core.leads.schemas import Custom, LeadFields
from outreach_core.targets.schemas import Id

MAX_IMPORT_ROWS = 5_000


class ImportRow(LeadFields):
    email: str | None = Field(
        default=None, description="Rows without a valid address are counted as invalid."
    )
    custom: Custom | None = Field(
        default=None,
        description=("Your own fields: up to 50 names with text, number, true/false or null values."),
    )


ROW_KEYS: dict[str, str] = {(field.alias or name): name for name, field in ImportRow.model_fields.items()}
"""An import row's keys on the wire (camelCase) -> in storage (snake_case, the `leads` columns)."""


def stored_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """An import row in storage form, as `import_queue` holds it: snake_case keys (`first_name`), from a row
    in either form (rows queued before the storage form was introduced are in wire form, `firstName`)."""
    return {ROW_KEYS.get(key, key): value for key, value in row.items()}


def _max_length(annotation: Any) -> int | None:
    """The `max_length` of a `TextN | None` field's string constraints (None: unbounded)."""
    for arg in get_args(annotation):
        for meta in get_args(arg)[1:]:
            if getattr(meta, "max_length", None) is not None:
                return int(meta.max_length)
    return None


TEXT_LIMITS: dict[str, int | None] = {
    (field.alias or name): _max_length(field.annotation)
    for name, field in ImportRow.model_fields.items()
    if name != "custom"
}
_CUSTOM_MAX_KEYS = 50
_CUSTOM_MAX_KEY_LENGTH = 64


def checked_rows(rows: Any) -> list[dict[str, Any]] | None:
    """Import rows in wire form checked in one lean loop, with empty (`null`) cells dropped; None when any
    row is not of the usual shape (then `ImportRow` validates them all and says what is wrong).

    Accepts exactly what `ImportRow` accepts in its usual form, and nothing else: camelCase keys, strings
    within each field's length (no NUL, no unpaired surrogate), `custom` an object of at most 50 keys of
    1-64 characters whose values are strings, numbers or booleans. A 5,000-row chunk through pydantic took
    about 13 µs a row with the rest of the request; this loop a fraction of that (docs/PERFORMANCE.md)."""
    if type(rows) is not list or len(rows) > MAX_IMPORT_ROWS:
        return None
    limits = TEXT_LIMITS
    out: list[dict[str, Any]] = []
    for row in rows:
        if type(row) is not dict:
            return None
        kept: dict[str, Any] = {}
        for key, value in row.items():
            if key in limits:
                if value is None:
                    continue
                limit = limits[key]
                if type(value) is not str or (limit is not None and len(value) > limit) or unstorable(value):
                    return None
            elif key != "custom":
                return None
            elif value is None:
                continue
            elif not _custom_ok(value):
                return None
            kept[key] = value
        out.append(kept)
    return out


def _custom_ok(custom: Any) -> bool:
    if type(custom) is not dict or len(custom) > _CUSTOM_MAX_KEYS:
        return False
    for key, value in custom.items():
        if not 1 <= len(key) <= _CUSTOM_MAX_KEY_LENGTH or unstorable(key):
            return False
        kind = type(value)
        if kind is str:
            if unstorable(value):
                return False
        elif kind is float:
            if value != value or value in (float("inf"), float("-inf")):
                return False
        elif kind is not int and kind is not bool:
            return False  # None and anything else: the model decides
    return True


ListName = Annotated[str, StringConstraints(min_length=1, max_length=120), NAME]


class ImportList(ExactlyOne):
    """An existing list (`id`) or a new one (`name`) that every imported lead joins."""

    id: Omittable[Id] = Field(default=None, description="The id of an existing lead list.")
    name: Omittable[ListName] = Field(
        default=None, description=("The name of a new lead list (or of an existing one with that name).")
    )


class ImportIn(WireModel):
    import_id: Id | None = Field(
        default=None, description="Omit on the first chunk; pass the returned id after."
    )
    file_name: Annotated[str, StringConstraints(max_length=300), SINGLE_LINE] | None = Field(
        default=None, description=("The name of the file the rows come from, shown with the import.")
    )
    target_list: ImportList | None = Field(
        default=None,
        alias="list",
        description=(
            'A list every imported lead joins: an existing one as {"id": ...} or a new one as {"name": ...}.'
        ),
    )
    existing: Literal["skip", "update"] = Field(
        default="skip",
        description=(
            "An address that is already a lead: `skip` the row, or `update` the lead with the row's fields."
        ),
    )
    verify: bool = Field(
        default=False, description=("true: the imported leads are queued for email verification.")
    )
    client_invalid: int = Field(
        default=0,
        ge=0,
        le=10_000_000,
        description=("Rows your client already dropped as invalid, added to the import's counters."),
    )
    client_duplicates: int = Field(
        default=0,
        ge=0,
        le=10_000_000,
        description=("Rows your client already dropped as duplicates, added to the import's counters."),
    )
    rows: list[ImportRow] = Field(description="Up to 5,000 rows per call.")
    final: bool = Field(default=False, description="true on the last chunk: the import then finishes.")
    _wire_rows: list[dict[str, Any]] | None = PrivateAttr(default=None)

    @classmethod
    def validate_fast(cls, data: Any) -> ImportIn | None:
        """The REST door's lean path (`http_api.handlers._validate`): the chunk's own fields validated by
        the model, its rows by `checked_rows`; None when either refuses (the model then validates all)."""
        if type(data) is not dict:
            return None
        rows = checked_rows(data.get("rows"))
        if rows is None:
            return None
        try:
            model = cls.model_validate({**data, "rows": []})
        except ValidationError:
            return None
        model._wire_rows = rows
        return model

    def wire_rows(self) -> list[dict[str, Any]]:
        """The rows in wire form (camelCase keys), empty cells left out: as `checked_rows` kept them, or as
        the model validated them."""
        if self._wire_rows is not None:
            return self._wire_rows
        return [row.model_dump(mode="json", by_alias=True, exclude_none=True) for row in self.rows]

    def row_count(self) -> int:
        return len(self._wire_rows) if self._wire_rows is not None else len(self.rows)


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
    failure_reason: str | None = Field(
        default=None, description="Why the import is `failed` (not in the spec; ours)."
    )


class LeadImports(WireModel):
    imports: list[LeadImport]


MAX_CSV_CHARS = 10_000_000
CsvField = Literal[
    "email",
    "firstName",
    "lastName",
    "company",
    "title",
    "website",
    "phone",
    "linkedin",
    "country",
    "timezone",
]


class ImportCsvIn(WireModel):
    """Body of `import_leads_csv`: a small CSV file's text, imported in one go."""

    csv: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CSV_CHARS)] = Field(
        description="The file's text with its header row, up to 5,000 data rows. Comma, semicolon, tab or "
        "pipe delimited; the header row may follow a few title lines, and must name the email column (Email, "
        "E-mail, Mail ..., or the column `map` names for email): 422 otherwise."
    )
    file_name: Annotated[str, StringConstraints(max_length=300), SINGLE_LINE] | None = Field(
        default=None, description="Shown in the import list."
    )
    target_list: ImportList | None = Field(
        default=None,
        alias="list",
        description="Put every imported lead on a list: an existing one or a new one.",
    )
    map: dict[CsvField, Annotated[str, StringConstraints(min_length=1, max_length=200)]] | None = Field(
        default=None,
        description="Lead field -> column header, where the automatic mapping (Email, E-mail, First Name, "
        "Company Name ...) is not what you want; each must be a column of `csv`'s header row (422 "
        "otherwise). Columns not mapped go to `custom` under their header.",
    )
    existing: Literal["skip", "update"] = Field(
        default="skip",
        description="Leads already in the workspace: skip them, or update them with the file's values.",
    )
    verify: bool = Field(
        default=False, description="Also verify the addresses (the verifier, when configured)."
    )


class RejectedRow(WireModel):
    line: int = Field(
        description="The row's line in the file (the header is line 1 unless title lines lead)."
    )
    reason: str


class CsvImport(WireModel):
    import_: LeadImport = Field(alias="import", description="The import, as `get_import` shows it.")
    encoding: str = Field(description="How the text was read (utf-8 for the MCP tool's text).")
    delimiter: str
    header_line: int
    columns: dict[str, str] = Field(description="Lead field -> the column it was read from.")
    custom: list[str] = Field(description="Columns stored as custom fields, under their header.")
    ignored: list[str] = Field(description="Columns left out: more than 50 custom columns.")
    rejected: list[RejectedRow] = Field(
        description="Rows left out: a value too long to store (the first 20; all are counted in `invalid`)."
    )
