"""The OpenAPI 3.1 document of the REST API, generated from the core catalogue and its pydantic models.

Nothing here is written by hand per endpoint: every path, parameter, request body and response schema comes
from an `Endpoint` entry and the wire models it names, so the document cannot drift from what the handlers
accept and return. Schemas are produced in one pydantic pass (`TypeAdapter.json_schemas`): request models in
validation mode, responses in serialization mode, by alias (camelCase). Pydantic gives colliding model names
(two `Item` classes, or a model whose input and output schemas differ) distinct component names.

Error responses are listed per operation so that a contract test (schemathesis) never meets a status the
document does not show; see `_error_statuses` for the rules.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue

from http_api.examples import body_example
from outreach_core.kernel.endpoint import AnyEndpoint, FileRoute, describe_path_params
from outreach_core.kernel.wire import NAMED_PATTERNS

OPENAPI_VERSION = "3.1.1"
API_PREFIX = "/api/v1"
REF_PREFIX = "#/components/schemas/"
ERROR_SCHEMA = "Error"
JSON = "application/json"


class ErrorInfo(BaseModel):
    """What went wrong: a stable code, a human message and machine-readable details."""

    code: str = Field(description="Stable machine-readable code, e.g. `invalid_input`, `not_found`.")
    message: str = Field(description="Human-readable explanation.")
    details: dict[str, Any] = Field(description="Extra facts, e.g. `fields` for `invalid_input`.")


class Error(BaseModel):
    """The body of every error response."""

    error: ErrorInfo


_ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "Malformed JSON body (`bad_request`).",
    401: "Missing, invalid, expired or revoked credential (`unauthorized`).",
    402: "The workspace needs an active plan (`plan_required`).",
    403: "Your role does not allow this (`forbidden`).",
    404: "Not found, or it belongs to another workspace (`not_found`).",
    409: "Refused in the current state (`conflict`, `invalid_state`, `launch_blocked`, ...).",
    413: "Request body or row count too large (`payload_too_large`).",
    422: "Invalid input; `details.fields` lists each field path and problem (`invalid_input`).",
    429: "Too many requests (`rate_limited`) or a plan quota is used up (`quota_exceeded`).",
    500: "Unexpected failure (`internal`); `details.reference` identifies it in the server logs.",
}

_HEADERS: dict[str, dict[str, Any]] = {
    "RateLimit-Limit": {
        "description": "Requests that can be made at once (token bucket capacity).",
        "schema": {"type": "integer"},
    },
    "RateLimit-Remaining": {
        "description": "Requests that can still be made right now.",
        "schema": {"type": "integer"},
    },
    "RateLimit-Reset": {
        "description": "Seconds until the bucket is full again.",
        "schema": {"type": "integer"},
    },
    "RateLimit-Policy": {
        "description": "Sustained rate: `<requests per minute>;w=60`.",
        "schema": {"type": "string"},
    },
    "Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}},
    "WWW-Authenticate": {"description": "`Bearer` challenge.", "schema": {"type": "string"}},
}
_RATE_LIMIT_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy")

_ERROR_NAMES: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    402: "PlanRequired",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    413: "PayloadTooLarge",
    422: "InvalidInput",
    429: "TooManyRequests",
    500: "Internal",
}


NO_NUL = "^[^\\u0000]*$"
"""Text may not contain NUL characters (PostgreSQL cannot store them; the models refuse them)."""


class _SchemaGenerator(GenerateJsonSchema):
    """Pydantic's generator without per-field titles (they only repeat the property name), and with the
    service-wide "no NUL characters" rule on every string that has no pattern of its own."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def dict_schema(self, schema: Any) -> JsonSchemaValue:
        """Key rules as `propertyNames` (pydantic puts a key pattern in `patternProperties`, which would let a
        key that breaks it through as an "additional" property)."""
        generated = super().dict_schema(schema)
        patterns = generated.get("patternProperties")
        if self.mode == "validation" and isinstance(patterns, dict) and list(patterns) == [NO_NUL]:
            generated["additionalProperties"] = patterns[NO_NUL]
            del generated["patternProperties"]
            generated.setdefault("propertyNames", {})["pattern"] = NO_NUL
        return generated

    def str_schema(self, schema: Any) -> JsonSchemaValue:
        generated = super().str_schema(schema)
        if self.mode == "validation":  # a rule on input; responses may quote what was sent
            if "pattern" in generated:
                generated["not"] = {"pattern": "\\u0000"}
            else:
                generated["pattern"] = NO_NUL
        return generated


def build_openapi(
    endpoints: list[AnyEndpoint],
    *,
    server_url: str,
    public: Iterable[str] = frozenset({"ping"}),
    files: Iterable[FileRoute] = (),
) -> dict[str, Any]:
    """Build the OpenAPI 3.1 document for `endpoints` and the file routes `files` (charts, CSV exports:
    their source endpoint's parameters and errors, a success of their media type) served under
    `server_url` + `/api/v1`.

    `public` names the operations that need no credential (they get `security: []` and no auth errors);
    every other operation requires the global bearer scheme (API key or OAuth access token).
    """
    file_routes = list(files)
    public_ops = frozenset(public)
    inputs: list[tuple[tuple[int, str], JsonSchemaMode, TypeAdapter[Any]]] = [
        ((-1, "error"), "serialization", TypeAdapter(Error))
    ]
    for i, ep in enumerate(endpoints):
        if ep.response is not None:
            inputs.append(((i, "response"), "serialization", TypeAdapter(ep.response)))
        if ep.body is not None:
            inputs.append(((i, "body"), "validation", TypeAdapter(ep.body)))
        if ep.query is not None:
            inputs.append(((i, "query"), "validation", TypeAdapter(ep.query)))
    for j, route in enumerate(file_routes):
        if route.source.query is not None:
            inputs.append(((len(endpoints) + j, "query"), "validation", TypeAdapter(route.source.query)))
    schemas, definitions = TypeAdapter.json_schemas(
        inputs, by_alias=True, ref_template=REF_PREFIX + "{model}", schema_generator=_SchemaGenerator
    )
    components: dict[str, Any] = dict(definitions.get("$defs", {}))
    error_ref = schemas[((-1, "error"), "serialization")]

    paths: dict[str, dict[str, Any]] = {}
    query_refs: set[str] = set()
    operation_ids: set[str] = set()
    for i, ep in enumerate(endpoints):
        method = ep.method.lower()
        if method in paths.get(ep.path, {}):
            raise ValueError(f"duplicate route {ep.method} {ep.path}")
        if ep.name in operation_ids:
            raise ValueError(f"duplicate operationId {ep.name!r}")
        operation_ids.add(ep.name)
        is_public = ep.name in public_ops
        operation: dict[str, Any] = {
            "operationId": ep.name,
            "summary": ep.summary,
            "description": ep.doc if is_public else f"{ep.doc}\n\n{ep.role_sentence}",
            "tags": [ep.tag],
        }
        if ep.tool:
            operation["x-mcp-tool"] = ep.name
        if is_public:
            operation["security"] = []
        else:
            operation["x-role"] = ep.role

        parameters = [
            {
                "name": name,
                "in": "path",
                "required": True,
                "description": described,
                "schema": {"type": "string", "minLength": 1, "pattern": NO_NUL},
            }
            for name, described in ep.path_descriptions.items()
        ]
        if ep.query is not None:
            query_schema = schemas[((i, "query"), "validation")]
            ref = query_schema.get("$ref", "")
            if ref.startswith(REF_PREFIX):
                query_refs.add(ref.removeprefix(REF_PREFIX))
            parameters += _query_parameters(_resolve(query_schema, components))
        if parameters:
            operation["parameters"] = parameters
        if ep.body is not None:
            body_schema = schemas[((i, "body"), "validation")]
            operation["requestBody"] = {
                "required": True,
                "content": {JSON: {"schema": body_schema, "example": body_example(body_schema, components)}},
            }

        responses: dict[str, Any] = {}
        success: dict[str, Any] = {"description": _success_description(ep)}
        if ep.response is not None and ep.status != 204:
            success["content"] = {JSON: {"schema": schemas[((i, "response"), "serialization")]}}
        if not is_public:
            success["headers"] = {h: _header_ref(h) for h in _RATE_LIMIT_HEADERS}
        responses[str(ep.status)] = success
        for status in _error_statuses(ep, public=is_public):
            responses[str(status)] = {"$ref": f"#/components/responses/{_ERROR_NAMES[status]}"}
        operation["responses"] = responses
        paths.setdefault(ep.path, {})[method] = operation

    for j, route in enumerate(file_routes):
        ep = route.source
        if "get" in paths.get(route.path, {}):
            raise ValueError(f"duplicate route GET {route.path}")
        if route.name in operation_ids:
            raise ValueError(f"duplicate operationId {route.name!r}")
        operation_ids.add(route.name)
        operation = {
            "operationId": route.name,
            "summary": route.summary,
            "description": f"{ep.doc}\n\nAnswered as `{route.media_type}`"
            + (f", offered for download as `{route.filename}`" if route.filename else "")
            + f".\n\n{ep.role_sentence}",
            "tags": [ep.tag],
            "x-role": ep.role,
        }
        parameters = [
            {
                "name": name,
                "in": "path",
                "required": True,
                "description": described,
                "schema": {"type": "string", "minLength": 1, "pattern": NO_NUL},
            }
            for name, described in describe_path_params(route.path).items()
        ]
        if ep.query is not None:
            query_schema = schemas[((len(endpoints) + j, "query"), "validation")]
            ref = query_schema.get("$ref", "")
            if ref.startswith(REF_PREFIX):
                query_refs.add(ref.removeprefix(REF_PREFIX))
            parameters += _query_parameters(_resolve(query_schema, components))
        if parameters:
            operation["parameters"] = parameters
        binary = {"type": "string", "contentMediaType": route.content_type}
        if not route.content_type.startswith("text/"):
            binary["contentEncoding"] = "binary"
        responses = {
            "200": {
                "description": "OK",
                "content": {route.content_type: {"schema": binary}},
                "headers": {h: _header_ref(h) for h in _RATE_LIMIT_HEADERS},
            }
        }
        for status in _error_statuses(ep, public=False):
            responses[str(status)] = {"$ref": f"#/components/responses/{_ERROR_NAMES[status]}"}
        operation["responses"] = responses
        paths.setdefault(route.path, {})["get"] = operation

    _drop_unreferenced(components, query_refs, paths)
    _name_error_schema(components, error_ref)
    _title_by_component_name(components)
    _alternatives_under_all_of(components)
    _drop_impossible_defaults(components, paths)
    _state_named_patterns(components, paths)

    tags: list[str] = []
    for ep in endpoints:
        if ep.tag not in tags:
            tags.append(ep.tag)

    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Outreach API",
            "version": "1.0.0",
            "description": (
                "Self-hostable cold-email outreach service. Every operation is also an MCP tool "
                "(`x-mcp-tool`) with the same arguments and result. `x-role` is the lowest role that may "
                "call an operation (`owner` > `admin` > `member`); a lower one gets 403 `forbidden`. "
                'Errors have the body `{"error": {"code", "message", "details"}}`.'
            ),
        },
        "servers": [{"url": server_url.rstrip("/") + API_PREFIX}],
        "security": [{"bearerAuth": []}],
        "tags": [{"name": t} for t in tags],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(components.items())),
            "responses": {_ERROR_NAMES[status]: _error_response(status) for status in sorted(_ERROR_NAMES)},
            "headers": copy.deepcopy(_HEADERS),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A workspace API key (or an OAuth access token on /mcp).",
                }
            },
        },
    }


def _success_description(ep: AnyEndpoint) -> str:
    return {200: "OK", 201: "Created", 202: "Accepted", 204: "No content"}.get(ep.status, "Success")


def _error_statuses(ep: AnyEndpoint, *, public: bool) -> list[int]:
    """Every error status the service can answer for this operation.

    - 400 (malformed JSON) and 413 (body too large) where there is a body;
    - 401/402/403/409 on every authenticated operation (credential, plan, role, state);
    - 404 where the caller names something: path parameters, or ids inside a body or query;
    - 422 where there is any input (path, query or body);
    - 429 (rate limit, quotas) and 500 everywhere.
    """
    has_input = bool(ep.path_params) or ep.body is not None or ep.query is not None
    statuses = {429, 500}
    if ep.body is not None:
        statuses |= {400, 413}
    if not public:
        statuses |= {401, 402, 403, 409}
    if has_input:
        statuses |= {404, 422}
    return sorted(statuses)


def _header_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/headers/{name}"}


def _error_response(status: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": _ERROR_DESCRIPTIONS[status],
        "content": {JSON: {"schema": {"$ref": REF_PREFIX + ERROR_SCHEMA}}},
    }
    if status == 401:
        response["headers"] = {"WWW-Authenticate": _header_ref("WWW-Authenticate")}
    elif status == 429:
        response["headers"] = {h: _header_ref(h) for h in ("Retry-After", *_RATE_LIMIT_HEADERS)}
    return response


def _resolve(schema: JsonSchemaValue, components: Mapping[str, Any]) -> JsonSchemaValue:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        resolved: JsonSchemaValue = components[ref.removeprefix(REF_PREFIX)]
        return resolved
    return schema


def _query_parameters(model_schema: JsonSchemaValue) -> list[dict[str, Any]]:
    """One query parameter per field of the query model; lists are repeated keys (`?a=1&a=2`)."""
    required = set(model_schema.get("required", []))
    params: list[dict[str, Any]] = []
    for name, prop in model_schema.get("properties", {}).items():
        schema = copy.deepcopy(prop)
        description = schema.pop("description", None)
        is_required = name in required
        if not is_required:
            schema = _without_null(schema)
        param: dict[str, Any] = {"name": name, "in": "query", "required": is_required, "schema": schema}
        if description:
            param["description"] = description
        if _is_array(schema):
            param["style"] = "form"
            param["explode"] = True
        params.append(param)
    return params


def _without_null(schema: JsonSchemaValue) -> JsonSchemaValue:
    """An absent optional query parameter already means null; drop the null branch and null default."""
    if schema.get("default", ...) is None:
        schema.pop("default")
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) != len(branches):
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return {**kept[0], **rest} if len(kept) == 1 else {**rest, "anyOf": kept}
    return schema


def _is_array(schema: JsonSchemaValue) -> bool:
    kind = schema.get("type")
    if kind == "array" or (isinstance(kind, list) and "array" in kind):
        return True
    return any(_is_array(b) for b in schema.get("anyOf", []) if isinstance(b, dict))


def _drop_unreferenced(components: dict[str, Any], candidates: set[str], paths: dict[str, Any]) -> None:
    """Remove query models from components: they are spread into parameters, not referenced."""
    for name in candidates:
        ref = json.dumps(REF_PREFIX + name)
        others = {k: v for k, v in components.items() if k != name}
        if ref not in json.dumps(paths) and ref not in json.dumps(others):
            components.pop(name, None)


def _title_by_component_name(components: dict[str, Any]) -> None:
    """Give every component the title of its own name.

    Pydantic keeps a model's class name as the title of both its input and output schemas
    (`LabelTriggers-Input`, `LabelTriggers-Output`), and client generators name classes after titles: two
    components with one title make them drop both (and everything that refers to them).
    """
    for name, schema in components.items():
        if isinstance(schema, dict) and schema.get("title", name) != name:
            schema["title"] = name


def _alternatives_under_all_of(components: dict[str, Any]) -> None:
    """Move a model's `oneOf`/`anyOf` shape rules (e.g. the two shapes of a mailbox) under `allOf`.

    `{properties, oneOf: [A, B]}` and `{properties, allOf: [{oneOf: [A, B]}]}` accept exactly the same
    documents, but client generators read the first as "one of two partial models" and lose the properties;
    the second they generate as the one model it is.
    """
    for schema in components.values():
        if not isinstance(schema, dict) or "properties" not in schema:
            continue
        for keyword in ("oneOf", "anyOf"):
            if keyword in schema:
                schema.setdefault("allOf", []).append({keyword: schema.pop(keyword)})


def _admits_null(schema: Any, components: Mapping[str, Any], seen: frozenset[str] = frozenset()) -> bool:
    if not isinstance(schema, dict):
        return schema is True
    if schema == {}:
        return True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in schema:
        return schema["const"] is None
    if "enum" in schema:
        return None in schema["enum"]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        name = ref.removeprefix(REF_PREFIX)
        if name in seen or name not in components:
            return False
        return _admits_null(components[name], components, seen | {name})
    branches = [*schema.get("anyOf", []), *schema.get("oneOf", [])]
    if branches:
        return any(_admits_null(b, components, seen) for b in branches)
    return kind is None and not any(k in schema for k in ("properties", "items", "allOf", "not"))


def _drop_impossible_defaults(components: dict[str, Any], paths: dict[str, Any]) -> None:
    """Remove `default: null` from schemas that do not accept null.

    An optional field typed `X | SkipJsonSchema[None] = None` (absent means "not given", null is refused)
    gets a null default from pydantic; OpenAPI validators rightly refuse a default its own schema rejects.
    """

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if "default" in node and node["default"] is None and not _admits_null(node, components):
                del node["default"]
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(components)
    visit(paths)


def _state_named_patterns(components: dict[str, Any], paths: dict[str, Any]) -> None:
    """Replace each `format` naming a long rule (`outreach_core.kernel.wire.NamedPattern`: every IANA zone,
    every top-level domain) by the rule itself, as a `pattern`. MCP tool schemas keep the short name."""
    made: dict[str, str] = {}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            name = node.get("format")
            if isinstance(name, str) and name in NAMED_PATTERNS:
                if name not in made:
                    made[name] = NAMED_PATTERNS[name]()
                del node["format"]
                node["pattern"] = made[name]
                node.pop("not", None)  # the "no NUL" rule: the named pattern admits none
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(components)
    visit(paths)


def _name_error_schema(components: dict[str, Any], error_ref: JsonSchemaValue) -> None:
    """Store the shared error schema under its plain name, `Error`.

    Pydantic names colliding models by module path, so a core model also called `Error` leaves the plain
    name free; nothing in the document references the error schema except `components.responses`.
    """
    if ERROR_SCHEMA in components:
        return
    old_name = str(error_ref["$ref"]).removeprefix(REF_PREFIX)
    components[ERROR_SCHEMA] = components.pop(old_name)
