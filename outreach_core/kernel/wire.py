"""Base classes and types for wire models (JSON in and out of every door)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import UnionType
from typing import Annotated, Any, Literal, Self, TypeVar, Union, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainSerializer,
    StringConstraints,
    TypeAdapter,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from outreach_core.kernel.geo import iso_names, valid_zones


def _iso_z(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


Timestamp = Annotated[
    datetime,
    PlainSerializer(_iso_z, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time", "examples": ["2026-11-21T14:08:29.123Z"]}),
]
"""A UTC instant; serialized as ISO 8601 with milliseconds and `Z`."""


EMAIL_PATTERN = r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}$"

EmailAddress = Annotated[
    str,
    StringConstraints(max_length=320, pattern=EMAIL_PATTERN),
    AfterValidator(str.lower),
]
"""An email address as people type it into forms; stored lower-cased. The rule is the pattern itself, so the
OpenAPI document and the server agree exactly on what is accepted."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def unstorable(text: str) -> bool:
    """NUL characters or unpaired surrogates (JSON can carry both): text no database or mail can hold."""
    return "\x00" in text or (not text.isascii() and _SURROGATE.search(text) is not None)


def contains_nul(value: Any) -> bool:
    """True when a string anywhere in `value` holds text PostgreSQL cannot store (see `unstorable`)."""
    if isinstance(value, str):
        return unstorable(value)
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(contains_nul(v) for v in value)
    return False


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_BLANK = re.compile("[\\s\x00-\x1f\x7f-\x9f\ufeff]*")

CONTROL_MESSAGE = "must not contain control characters (line breaks, tabs, escape codes)"


def has_control_characters(text: str) -> bool:
    """C0 (U+0000-U+001F: NUL, tab, CR, LF, ESC, ...), DEL and C1 (U+007F-U+009F) control characters."""
    return _CONTROL.search(text) is not None


_NO_CONTROL = "\\u0000-\\u001f\\u007f-\\u009f"
SINGLE_LINE_PATTERN = f"^[^{_NO_CONTROL}]*$"
NAME_PATTERN = f"^[^{_NO_CONTROL}]*[^\\s{_NO_CONTROL}\\ufeff][^{_NO_CONTROL}]*$"
"""No control character, and at least one that is not blank. Regex engines disagree on what `\\s` covers
(ECMAScript in the OpenAPI document, Rust, Python's `str.strip`), so the characters only some of them treat
as blank (U+001C-U+001F, U+0085, U+FEFF) are spelled out: a name is refused by all of them or by none."""


@dataclass(frozen=True)
class _TextRule:
    """Refuses text `problem` objects to, with its message; the OpenAPI document shows `pattern`, which
    accepts exactly the same text (so generated clients and fuzzers agree with the server)."""

    pattern: str
    problem: Callable[[str], str | None]

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        def check(value: str) -> str:
            problem = self.problem(value)
            if problem is not None:
                raise ValueError(problem)
            return value

        # named after the rule: pydantic shows it in the error location of a union's branch
        check.__name__ = self.problem.__name__.strip("_").removesuffix("_problem")
        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        generated = handler(schema)
        if handler.mode == "validation":
            own = generated.get("pattern")
            if own is None or own == "^[^\\u0000]*$":
                generated["pattern"] = self.pattern
            else:
                generated.setdefault("allOf", []).append({"pattern": self.pattern})
        return generated


def _single_line_problem(value: str) -> str | None:
    return CONTROL_MESSAGE if has_control_characters(value) else None


def _name_problem(value: str) -> str | None:
    if has_control_characters(value):
        return CONTROL_MESSAGE
    return "must not be blank" if _BLANK.fullmatch(value) else None


SINGLE_LINE = _TextRule(SINGLE_LINE_PATTERN, _single_line_problem)
"""For text that becomes one line: an email header (display names, subjects) or a value shown in lists and
logs. No C0/C1 control characters: no CR/LF (header injection), no tab, no terminal escape codes. Put it
after the length limits, so they keep their own messages:
`Annotated[str, StringConstraints(max_length=120), SINGLE_LINE]`."""

NAME = _TextRule(NAME_PATTERN, _name_problem)
"""For names people give things (API keys, lists, labels, campaigns, workspaces, members): `SINGLE_LINE`
and not blank. `Annotated[str, StringConstraints(min_length=1, max_length=60), NAME]`."""


NULL_MESSAGE = "must not be null: leave the field out instead"


@dataclass(frozen=True)
class _NotNull:
    """Marks an optional field that may be left out but never sent as null (see `Omittable`)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        def refuse_null(value: Any) -> Any:
            if value is None:
                raise PydanticCustomError("not_null", NULL_MESSAGE)
            return value

        # Checked before the (nullable) type itself: errors keep the plain field path (`smtp.host`).
        return core_schema.no_info_before_validator_function(refuse_null, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        generated = handler(schema)
        branches = generated.get("anyOf")
        if isinstance(branches, list) and {"type": "null"} in branches:
            kept = [b for b in branches if b != {"type": "null"}]
            rest = {k: v for k, v in generated.items() if k != "anyOf"}
            return {**kept[0], **rest} if len(kept) == 1 else {**rest, "anyOf": kept}
        return generated


_T = TypeVar("_T")

Omittable = Annotated[_T | None, _NotNull()]
"""An optional field that may be left out (Python sees None) but never sent as `null`: the API's one rule
for explicit nulls (docs/api.md, "Absent and null"). `null` is accepted only where it means something (no
value, or clear the stored one), and there the field is typed `X | None` and the document shows it as
nullable; everywhere else the field is `Omittable[X] = None`, the document shows it as not nullable, and
`null` is refused with 422 naming the field. `wait_days: Omittable[WaitDays] = None`."""


@dataclass(frozen=True)
class SchemaPattern:
    """States in the JSON schema (input only) a rule that the operation checks itself, as a regular
    expression: every value matching it is accepted (the server may accept more, such as the spellings a
    normaliser corrects, which the field's description names). Generated clients and fuzzers then build
    values the API takes. The model does not check it: the operation's own check decides."""

    pattern: str
    also: tuple[str, ...] = ()
    """More patterns the value matches as well (`allOf`), e.g. a length limit on one part of it."""

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        generated = handler(schema)
        if handler.mode == "validation":
            generated["pattern"] = self.pattern
            generated.pop("not", None)  # the "no NUL" rule: a stated pattern admits none
            if self.also:
                generated.setdefault("allOf", []).extend({"pattern": p} for p in self.also)
        return generated


NAMED_PATTERNS: dict[str, Callable[[], str]] = {}
"""Rules too long to repeat in every MCP tool schema (every IANA zone name, every top-level domain): the
models' JSON schemas show them as a `format` name; the OpenAPI document (`http_api/openapi.py`) replaces the
name with the pattern made by this function."""


@dataclass(frozen=True)
class NamedPattern:
    """Like `SchemaPattern` for a long pattern: `format: <name>` in the JSON schema, the pattern made by
    `make` in the OpenAPI document (registered in `NAMED_PATTERNS`)."""

    name: str
    make: Callable[[], str]

    def __post_init__(self) -> None:
        NAMED_PATTERNS.setdefault(self.name, self.make)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        generated = handler(schema)
        if handler.mode == "validation":
            generated["format"] = self.name
        return generated


def one_of_pattern(values: Iterable[str]) -> str:
    """A pattern matching exactly these strings (letters, digits and `/_-+.` in them), in the dialect shared
    by ECMA-262 (JSON Schema) and Python."""
    escaped = sorted(v.replace(".", "\\.").replace("+", "\\+") for v in values)
    return "^(?:" + "|".join(escaped) + ")$"


TIME_ZONE = NamedPattern("iana-time-zone", lambda: one_of_pattern(valid_zones()))
"""Every IANA zone name this server knows, as the OpenAPI document lists them."""

COUNTRY_CODE = NamedPattern("iso-country-code", lambda: one_of_pattern(iso_names()))
"""Every ISO 3166-1 alpha-2 code, as the OpenAPI document lists them."""


def _iana(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError("must be an IANA time zone such as Europe/Paris") from exc
    return value


_YEAR = "(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
DATE_PATTERN = (
    f"^(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    f"|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)$"
)
"""A calendar date `YYYY-MM-DD` (years 0001-9999, leap days included): exactly the dates
`datetime.date.fromisoformat` takes in that form, as a pattern the document states and the model checks."""


def _date(value: str) -> str:
    try:
        dt.date.fromisoformat(value)
    except ValueError as exc:
        raise ValueError("must be a date YYYY-MM-DD") from exc
    return value


Timezone = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64),
    AfterValidator(_iana),
    TIME_ZONE,
    Field(description="An IANA time zone name such as Europe/Berlin."),
]
DateText = Annotated[
    str,
    StringConstraints(min_length=10, max_length=10, pattern=DATE_PATTERN),
    AfterValidator(_date),
    Field(json_schema_extra={"format": "date"}),
]


FROM_STRINGS = "from_strings"
"""Validation context flag for input that arrives as text (query strings), where "true" means true."""


def _admits_bool(annotation: Any) -> bool:
    if annotation is bool or annotation is Any:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _admits_bool(get_args(annotation)[0])
    if origin is Literal:
        return any(isinstance(a, bool) for a in get_args(annotation))
    if origin in (Union, UnionType):
        return any(_admits_bool(a) for a in get_args(annotation))
    return origin is not None and origin not in (list, dict, tuple, set) and not isinstance(origin, type)


@functools.cache
def _field_rules(model: type[BaseModel], field_name: str | None) -> tuple[bool, bool, bool]:
    """(takes only booleans, takes booleans at all, holds wire models), computed once per field."""
    field = model.model_fields.get(field_name) if field_name else None
    if field is None:
        return False, True, False
    return _is_bool(field.annotation), _admits_bool(field.annotation), _holds_wire_models(field.annotation)


def _holds_wire_models(annotation: Any) -> bool:
    """True when every non-None alternative of the annotation is a wire model or a list of them."""
    if isinstance(annotation, type) and issubclass(annotation, WireModel):
        return True
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _holds_wire_models(args[0])
    if origin is list:
        return bool(args) and _holds_wire_models(args[0])
    if origin in (Union, UnionType):
        rest = [a for a in args if a is not type(None)]
        return bool(rest) and all(_holds_wire_models(a) for a in rest)
    return False


def _is_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    args = get_args(annotation)
    return bool(args) and all(a is bool or a is type(None) for a in args) and bool in args


def _columns(row: Any) -> Any:
    """The mapping of a database row's columns (a SQLAlchemy `Row`, or a mapping already)."""
    return row._mapping if hasattr(row, "_mapping") else row


class RowRecord:
    """Mixin of the dataclasses made from database rows: `from_row` as `WireModel.from_row` has it."""

    @classmethod
    def from_row(cls, row: Any, /, **values: Any) -> Self:
        """The record from a database row: every field not given in `values` is read from the row's column of
        the same name; what is computed or named differently goes in `values`."""
        columns = _columns(row)
        read = {name: columns[name] for name in _field_names(cls) if name not in values and name in columns}
        made: Self = cls(**read, **values)
        return made


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    return names


class WireModel(BaseModel):
    """camelCase on the wire, snake_case in Python, unknown fields rejected, no NUL characters in text."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        serialize_by_alias=True,
        validate_by_name=True,
        validate_by_alias=True,
    )

    @classmethod
    def from_row(cls, row: Any, /, **values: Any) -> Self:
        """The model from a database row: every field not given in `values` is read from the row's column of
        the same (snake_case) name, when the row has one (else the field's default applies). What is computed
        or named differently goes in `values`. The one way rows become wire models."""
        columns = _columns(row)
        read = {name: columns[name] for name in cls.model_fields if name not in values and name in columns}
        return cls(**read, **values)

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul_and_real_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        # Runs for every field of every row of a 5,000-row import: the common cases return early.
        if value is None:
            return value
        is_bool, admits_bool, nested_models = _field_rules(cls, info.field_name)
        if type(value) is str:
            if unstorable(value):
                raise ValueError("text must not contain NUL (\\u0000) characters or unpaired surrogates")
        elif not nested_models and contains_nul(value):  # nested wire models check their own fields
            raise ValueError("text must not contain NUL (\\u0000) characters or unpaired surrogates")
        if info.context and info.context.get(FROM_STRINGS):
            return value
        # JSON input is taken at its type: no 0/1 for booleans, no true/false for numbers.
        if isinstance(value, bool):
            if not admits_bool:
                raise ValueError("Input should be a number, not a boolean")
        elif is_bool:
            raise ValueError("Input should be a boolean (true or false)")
        return value


class ExactlyOne(WireModel):
    """An object that must carry exactly one of its (optional) fields, none of them null.

    Subclasses declare fields as `Omittable[X] = None`, so the JSON schema shows them as non-nullable with
    `minProperties`/`maxProperties` 1: the document and the server agree."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = self.model_fields_set
        if len(given) != 1 or any(getattr(self, k) is None for k in given):
            names = " or ".join(f.alias or n for n, f in type(self).model_fields.items())
            raise ValueError(f"give exactly one of {names}")
        return self


class Ok(WireModel):
    ok: bool = True


def dump(value: Any, type_: Any = None) -> Any:
    """Serialize a response exactly as every door sends it (aliases, JSON types)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    adapter: TypeAdapter[Any] = TypeAdapter(type_ if type_ is not None else type(value))
    return adapter.dump_python(value, mode="json", by_alias=True)
