"""Base classes and types for wire models (JSON in and out of every door)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    PlainSerializer,
    StringConstraints,
    TypeAdapter,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel


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


class WireModel(BaseModel):
    """camelCase on the wire, snake_case in Python, unknown fields rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        serialize_by_alias=True,
        validate_by_name=True,
        validate_by_alias=True,
    )


class Ok(WireModel):
    ok: bool = True


def dump(value: Any, type_: Any = None) -> Any:
    """Serialize a response exactly as every door sends it (aliases, JSON types)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    adapter: TypeAdapter[Any] = TypeAdapter(type_ if type_ is not None else type(value))
    return adapter.dump_python(value, mode="json", by_alias=True)
