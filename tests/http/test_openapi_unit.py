"""The OpenAPI document is generated from the catalogue and is a valid OpenAPI 3.1 document."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import Field

from http_api.openapi import build_openapi
from outreach_core.catalog import all_endpoints
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok, WireModel
from outreach_core.workspace.operations import ping
from outreach_core.workspace.schemas import Ping

PING = Endpoint("GET", "/ping", ping, Ping, read_only=True, tag="workspace")
SERVER = "https://outreach.example.com"


@pytest.fixture(scope="module")
def endpoints() -> list[Endpoint]:
    return [PING, *all_endpoints()]


@pytest.fixture(scope="module")
def doc(endpoints: list[Endpoint]) -> dict[str, Any]:
    return build_openapi(endpoints, server_url=SERVER + "/", public={"ping"})


def resolve(doc: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        node = doc
        for part in ref[2:].split("/"):
            node = node[part]
    return node


def walk_refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in walk_refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in walk_refs(v)]
    return []


def operation(doc: dict[str, Any], ep: Endpoint) -> dict[str, Any]:
    return dict(doc["paths"][ep.path][ep.method.lower()])


def validate_document(doc: dict[str, Any]) -> None:
    """openapi-spec-validator when installed, else schemathesis' OpenAPI 3.1 meta-schema check."""
    try:
        from openapi_spec_validator import validate
    except ImportError:
        import schemathesis

        schemathesis.openapi.from_dict(doc).validate()
    else:
        validate(doc)
    # Every schema is also a valid JSON Schema 2020-12 document (the 3.1 default dialect).
    for name, schema in doc["components"]["schemas"].items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:  # pragma: no cover - message for the failure
            raise AssertionError(f"components.schemas.{name}: {exc.message}") from exc


def test_document_header(doc: dict[str, Any]) -> None:
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["title"] == "Outreach API"
    assert doc["info"]["version"] == "1.0.0"
    assert doc["servers"] == [{"url": SERVER + "/api/v1"}]
    json.dumps(doc)  # plain JSON all the way down


def test_document_validates(doc: dict[str, Any]) -> None:
    validate_document(doc)


def test_every_ref_resolves(doc: dict[str, Any]) -> None:
    for ref in walk_refs(doc):
        resolve(doc, {"$ref": ref})


def test_every_endpoint_is_present(doc: dict[str, Any], endpoints: list[Endpoint]) -> None:
    ids = []
    for ep in endpoints:
        op = operation(doc, ep)
        assert op["operationId"] == ep.name
        assert op["summary"] == ep.summary
        if ep.name == "ping":
            assert op["description"] == ep.doc and "x-role" not in op
        else:
            assert op["description"] == f"{ep.doc}\n\n{ep.role_sentence}"
            assert op["x-role"] == ep.role
        assert op["tags"] == [ep.tag]
        assert str(ep.status) in op["responses"]
        ids.append(op["operationId"])
    assert len(ids) == len(set(ids))
    assert sum(len(methods) for methods in doc["paths"].values()) == len(endpoints)


def test_roles_are_stated(doc: dict[str, Any]) -> None:
    """What a client generator or a reader of the document sees: the lowest role of each operation."""
    invite, change_role, webhooks = (
        doc["paths"]["/invitations"]["post"],
        doc["paths"]["/members/{id}"],
        doc["paths"]["/webhooks"],
    )
    assert invite["x-role"] == "admin" and invite["description"].endswith(
        "Only owners and admins may call this."
    )
    assert change_role["patch"]["x-role"] == "owner"
    assert change_role["patch"]["description"].endswith("Only owners may call this.")
    assert webhooks["get"]["x-role"] == "member" and webhooks["post"]["x-role"] == "admin"
    assert webhooks["get"]["description"].endswith("Any member of the workspace may call this.")
    assert "`x-role`" in doc["info"]["description"]


def test_bearer_auth_everywhere_except_ping(doc: dict[str, Any], endpoints: list[Endpoint]) -> None:
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": doc["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    assert doc["security"] == [{"bearerAuth": []}]
    ping_op = operation(doc, PING)
    assert ping_op["security"] == []
    assert "401" not in ping_op["responses"]
    for ep in endpoints:
        if ep is PING:
            continue
        op = operation(doc, ep)
        assert "security" not in op  # the global requirement applies
        for status in ("401", "402", "403", "409", "429", "500"):
            assert status in op["responses"], (ep.name, status)


def test_error_responses_follow_the_inputs(doc: dict[str, Any], endpoints: list[Endpoint]) -> None:
    error_schema = doc["components"]["schemas"]["Error"]
    assert error_schema["required"] == ["error"]
    info = resolve(doc, error_schema["properties"]["error"])
    assert set(info["required"]) == {"code", "message", "details"}
    for ep in endpoints:
        responses = operation(doc, ep)["responses"]
        has_body = ep.body is not None
        has_input = has_body or ep.query is not None or bool(ep.path_params)
        assert ("400" in responses) is has_body, ep.name
        assert ("413" in responses) is has_body, ep.name
        assert ("422" in responses) is has_input, ep.name
        if ep.path_params:
            assert "404" in responses
        for status, response in responses.items():
            if status.startswith(("4", "5")):
                schema = resolve(doc, response)["content"]["application/json"]["schema"]
                assert resolve(doc, schema) is error_schema
    too_many = resolve(doc, operation(doc, all_endpoints()[0])["responses"]["429"])
    assert "Retry-After" in too_many["headers"]


def test_path_parameters(doc: dict[str, Any], endpoints: list[Endpoint]) -> None:
    with_params = [ep for ep in endpoints if ep.path_params]
    assert with_params
    for ep in with_params:
        path = [p for p in operation(doc, ep)["parameters"] if p["in"] == "path"]
        assert [p["name"] for p in path] == ep.path_params
        for p in path:
            assert p["required"] is True and p["schema"]["type"] == "string"


def test_create_api_key_body_is_camel_case_with_limits(
    doc: dict[str, Any], endpoints: list[Endpoint]
) -> None:
    (create,) = [ep for ep in endpoints if ep.name == "create_api_key"]
    body = operation(doc, create)["requestBody"]
    assert body["required"] is True
    schema = resolve(doc, body["content"]["application/json"]["schema"])
    assert set(schema["properties"]) == {"name", "expiresInDays"}
    assert schema["required"] == ["name"]
    assert schema["properties"]["name"]["maxLength"] == 60
    assert schema["properties"]["name"]["minLength"] == 1
    assert schema["additionalProperties"] is False
    response = operation(doc, create)["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(resolve(doc, response)["properties"]) == {"id", "key"}


def test_response_schemas_use_serialization_aliases(doc: dict[str, Any], endpoints: list[Endpoint]) -> None:
    (list_keys,) = [ep for ep in endpoints if ep.name == "list_api_keys"]
    schema = operation(doc, list_keys)["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["type"] == "array"
    item = resolve(doc, schema["items"])
    assert {"createdAt", "lastUsedAt", "expiresAt", "createdBy"} <= set(item["properties"])
    assert item["properties"]["createdAt"]["format"] == "date-time"


# --- synthetic catalogues: query parameters, collisions, public operations -------------------------------


class Filters(WireModel):
    ids: list[str]
    status: list[str] | None = None
    page_size: int = Field(default=50, ge=1, le=100, description="Rows per page.")
    search: str | None = Field(default=None, max_length=200)


def _first_item() -> type[WireModel]:
    class Item(WireModel):
        alpha: int

    return Item


def _second_item() -> type[WireModel]:
    class Item(WireModel):  # same class name: component names must not collide
        beta: int

    return Item


async def list_things(ctx: Any, query: Filters) -> list[Any]:
    """List things.

    Longer description."""
    return []


async def get_thing(ctx: Any, id: str) -> Any:
    """Get a thing."""


async def put_thing(ctx: Any, id: str, body: Any) -> Any:
    """Replace a thing."""


async def health(ctx: Any) -> Ok:
    """Health."""
    return Ok()


def test_query_parameters_from_the_query_model() -> None:
    ep = Endpoint("GET", "/things", list_things, list[Ok], query=Filters, tag="things")
    doc = build_openapi([ep], server_url=SERVER)
    validate_document(doc)
    op = doc["paths"]["/things"]["get"]
    assert op["summary"] == "List things."
    params = {p["name"]: p for p in op["parameters"]}
    assert list(params) == ["ids", "status", "pageSize", "search"]
    assert all(p["in"] == "query" for p in params.values())
    assert params["ids"]["required"] is True
    assert params["ids"]["schema"]["type"] == "array"
    assert (params["ids"]["style"], params["ids"]["explode"]) == ("form", True)
    assert params["status"]["required"] is False
    assert params["status"]["schema"] == {
        "type": "array",
        "items": {"type": "string", "pattern": "^[^\\u0000]*$"},
    }
    assert (params["status"]["style"], params["status"]["explode"]) == ("form", True)
    assert params["pageSize"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
    assert params["pageSize"]["description"] == "Rows per page."
    assert "style" not in params["pageSize"]
    assert params["search"]["schema"] == {"type": "string", "maxLength": 200, "pattern": "^[^\\u0000]*$"}
    assert "Filters" not in doc["components"]["schemas"]  # spread into parameters, not referenced
    assert "422" in op["responses"] and "404" in op["responses"] and "400" not in op["responses"]


def test_model_name_collisions_get_distinct_components() -> None:
    first, second = _first_item(), _second_item()
    eps = [
        Endpoint("GET", "/things/{id}", get_thing, first, tag="things"),
        Endpoint("PUT", "/things/{id}", put_thing, second, body=first, tag="things"),
    ]
    doc = build_openapi(eps, server_url=SERVER)
    validate_document(doc)
    get_op, put_op = doc["paths"]["/things/{id}"]["get"], doc["paths"]["/things/{id}"]["put"]
    get_schema = get_op["responses"]["200"]["content"]["application/json"]["schema"]
    put_schema = put_op["responses"]["200"]["content"]["application/json"]["schema"]
    body_schema = put_op["requestBody"]["content"]["application/json"]["schema"]
    assert get_schema["$ref"] != put_schema["$ref"]
    assert set(resolve(doc, get_schema)["properties"]) == {"alpha"}
    assert set(resolve(doc, put_schema)["properties"]) == {"beta"}
    assert set(resolve(doc, body_schema)["properties"]) == {"alpha"}


def test_a_core_model_named_error_does_not_replace_the_error_schema() -> None:
    error_model = type("Error", (WireModel,), {"__annotations__": {"reason": str}})
    doc = build_openapi([Endpoint("GET", "/err", health, error_model)], server_url=SERVER)
    validate_document(doc)
    assert "error" in doc["components"]["schemas"]["Error"]["properties"]
    ok_schema = doc["paths"]["/err"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(resolve(doc, ok_schema)["properties"]) == {"reason"}


def test_public_operations_and_duplicates() -> None:
    eps = [Endpoint("GET", "/health", health, Ok)]
    doc = build_openapi(eps, server_url=SERVER, public={"health"})
    responses = doc["paths"]["/health"]["get"]["responses"]
    assert doc["paths"]["/health"]["get"]["security"] == []
    assert sorted(responses) == ["200", "429", "500"]
    with pytest.raises(ValueError, match="duplicate route"):
        build_openapi(eps * 2, server_url=SERVER)
    with pytest.raises(ValueError, match="duplicate operationId"):
        build_openapi([*eps, Endpoint("POST", "/health", health, Ok)], server_url=SERVER)
