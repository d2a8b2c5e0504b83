"""An example request body for every operation of the OpenAPI document, made from the body's own schema.

The example is what a person would send first: every required field, and where a body has no required
field (PATCH-style updates) its first two fields, each with a plausible value: the schema's own `examples`
or `default` where it has one, else a value built from the field's name and rules (an address for `email`,
a URL for `url`, an IANA zone for a time zone, the smallest allowed number ...). Exactly one of the
alternatives of a `oneOf`/`anyOf` is used. `tests/http/test_openapi_docs.py` checks that the body model of
every operation accepts its example, so an example can never show a request that is refused.

A model whose generated example would be wrong declares its own with pydantic's
`model_config = ConfigDict(json_schema_extra={"examples": [...]})`; the first one is used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REF_PREFIX = "#/components/schemas/"
_BY_FORMAT: dict[str, Any] = {
    "email": "ada@example.com",
    "uri": "https://www.example.com",
    "date-time": "2026-01-05T09:00:00.000Z",
    "date": "2026-01-05",
    "iana-time-zone": "Europe/Berlin",
    "iso-country-code": "DE",
    "public-https-url": "https://hooks.example.com/outreach",
    "password": "app-password-123",
}
_BY_NAME: list[tuple[str, Any]] = [
    (r"(^|_)e?mail$|^email$", "ada@example.com"),
    (r"url$|^website$", "https://www.example.com"),
    (r"^linkedin$", "https://www.linkedin.com/in/ada-lovelace"),
    (r"time_?zone", "Europe/Berlin"),
    (r"^country$", "DE"),
    (r"^colou?r$", "#3366ff"),
    (r"^subject$", "Quick question about {{company}}"),
    (r"^body$", "Hi {{firstName}},\n\nWould a short call next week help?\n\n{{unsubscribe}}"),
    (r"^first_?name$", "Ada"),
    (r"^last_?name$", "Lovelace"),
    (r"^company$", "Example Ltd"),
    (r"^title$", "Head of Sales"),
    (r"^phone$", "+49 30 1234567"),
    (r"^host$", "mail.example.com"),
    (r"^(domain|website_?domain)$", "example.com"),
    (r"^name$", "Q3 outreach"),
    (r"^description$", "CRM sync"),
    (r"^reason$", "Asked not to be contacted"),
    (r"^(username|user)$", "ada@example.com"),
    (r"^entr(y|ies)$", "example.com"),
    (r"^key$", "sk-your-own-key"),
    (r"^slug$", "acme"),
    (r"^(ids|.*_ids|.*Ids)$", ["01JBX6Y8Q4ZK3N5V7W9XAB12CD"]),
    (r"(^id$|_id$|Id$)", "01JBX6Y8Q4ZK3N5V7W9XAB12CD"),
]
_MAX_DEPTH = 8


def body_example(schema: Mapping[str, Any], components: Mapping[str, Any]) -> Any:
    """An example document for the request body `schema` (references into `components`)."""
    return _example(schema, components, "", 0)


def _resolve(schema: Mapping[str, Any], components: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    while isinstance(ref, str) and ref.startswith(REF_PREFIX):
        schema = components[ref.removeprefix(REF_PREFIX)]
        ref = schema.get("$ref")
    return schema


def _example(schema: Mapping[str, Any], components: Mapping[str, Any], name: str, depth: int) -> Any:
    schema = _resolve(schema, components)
    for key in ("examples",):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema[key][0]
    if "const" in schema:
        return schema["const"]
    if schema.get("default") not in (None, ""):
        return schema["default"]
    enum = [v for v in schema.get("enum", []) if v is not None]
    if enum:
        return enum[0]
    branches = [b for b in [*schema.get("oneOf", []), *schema.get("anyOf", [])] if b != {"type": "null"}]
    if branches and "properties" not in schema:
        return _example(branches[0], components, name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or "properties" in schema or _objects_only(schema.get("allOf"), components):
        return _object(schema, components, depth)
    if kind == "array":
        item = _example(schema.get("items", {}), components, _singular(name), depth + 1)
        return [item] * max(1, int(schema.get("minItems", 1)))
    if kind == "integer" or kind == "number":
        return _number(schema, name, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "string" or kind is None:
        return _string(schema, name)
    return None


def _object(schema: Mapping[str, Any], components: Mapping[str, Any], depth: int) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        return {}
    result: dict[str, Any] = {}
    for part in schema.get("allOf", []):
        value = _example(part, components, "", depth + 1)
        if isinstance(value, dict):
            result.update(value)
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = [p for p in schema.get("required", []) if p in properties]
    chosen = required or [p for p in properties][: min(2, int(schema.get("maxProperties", 2)))]
    if "email" in properties and "email" not in chosen and len(chosen) < schema.get("maxProperties", 99):
        chosen = ["email", *chosen]  # a lead or mailbox example names its address
    for prop in chosen:
        if prop in result:
            continue
        value = _example(properties[prop], components, _snake(prop), depth + 1)
        if value is not None or _admits_null(properties[prop]):
            result[prop] = value
    return result


def _number(schema: Mapping[str, Any], name: str, *, integer: bool) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value: float = max(low, 1) if "exclusiveMinimum" not in schema else low + 1
    if name == "port":
        value = 587
    elif name.endswith("_days") or name == "days":
        value = max(value, min(7, high if high is not None else 7))
    if high is not None:
        value = min(value, high)
    return int(value) if integer else float(value)


def _string(schema: Mapping[str, Any], name: str) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _BY_FORMAT:
        return str(_BY_FORMAT[fmt])
    for pattern, value in _BY_NAME:
        if re.search(pattern, name) and isinstance(value, str):
            return value
    text = name.replace("_", " ") or "text"
    minimum = int(schema.get("minLength", 0))
    maximum = schema.get("maxLength")
    if len(text) < minimum:
        text = (text + " " + "x" * minimum)[: max(minimum, len(text))]
    return text[: int(maximum)] if maximum is not None else text


def _objects_only(parts: Any, components: Mapping[str, Any]) -> bool:
    """An `allOf` whose parts are all objects (merged), rather than rules on one value (a string's
    patterns)."""
    if not isinstance(parts, list) or not parts:
        return False
    resolved = [_resolve(p, components) for p in parts]
    return all(p.get("type") == "object" or "properties" in p for p in resolved)


def _admits_null(schema: Mapping[str, Any]) -> bool:
    return any(b == {"type": "null"} for b in schema.get("anyOf", []))


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _singular(name: str) -> str:
    if name.endswith("_ids"):
        return name[:-1]
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name
