"""Deeply nested JSON, sent from outside: 400 with the malformed-JSON error on every REST route with a body
and on MCP, never a 500 or a traceback in the log."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from http_api.app import api_endpoints
from http_api.handlers import MAX_JSON_DEPTH
from tests.conftest import MakeWorkspace
from tests.doors import MCP_HEADERS, MCP_INITIALIZE

BODY_ROUTES = [e for e in api_endpoints() if e.body is not None]


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def route(path: str) -> str:
    for name in ("id", "stepId", "variantId", "campaignLeadId", "sendId", "importId"):
        path = path.replace("{" + name + "}", "x")
    return "/api/v1" + path


@pytest.mark.parametrize("endpoint", BODY_ROUTES, ids=[f"{e.method} {e.path}" for e in BODY_ROUTES])
async def test_a_thousand_levels_is_a_400_on_every_route_with_a_body(
    endpoint: Any, http: httpx.AsyncClient, make_workspace: MakeWorkspace, capfd: pytest.CaptureFixture[str]
) -> None:
    ws = await make_workspace()
    headers = {**ws.headers, "Content-Type": "application/json"}
    for body in (nested(1000), nested(1000, '{"a":', "}"), '{"name": ' + nested(5000) + "}"):
        response = await http.request(endpoint.method, route(endpoint.path), headers=headers, content=body)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "bad_request" and "nested" in error["message"]
        assert error["details"] == {"maxDepth": MAX_JSON_DEPTH}
    logged = capfd.readouterr().err
    assert "Traceback" not in logged and "request_failed" not in logged


async def test_the_documented_depth_is_accepted(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """`MAX_JSON_DEPTH` levels parse (the model then judges the content); one more is refused."""
    ws = await make_workspace()
    headers = {**ws.headers, "Content-Type": "application/json"}
    # brackets inside strings do not nest
    filler = "[" * (MAX_JSON_DEPTH - 1) + '"[{\\"[[[[[["' + "]" * (MAX_JSON_DEPTH - 1)
    at_limit = await http.post("/api/v1/apiKeys/create", headers=headers, content='{"name": ' + filler + "}")
    assert at_limit.status_code == 422 and at_limit.json()["error"]["code"] == "invalid_input"
    beyond = '{"name": ' + "[" * MAX_JSON_DEPTH + "1" + "]" * MAX_JSON_DEPTH + "}"
    refused = await http.post("/api/v1/apiKeys/create", headers=headers, content=beyond)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_request"
    # an ordinary deep-ish body (a sequence) is unaffected
    fine = await http.post("/api/v1/apiKeys/create", headers=headers, json={"name": '[{"not nested"}]'})
    assert fine.status_code == 200


async def test_mcp_answers_deep_nesting_with_400(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, capfd: pytest.CaptureFixture[str]
) -> None:
    ws = await make_workspace()
    headers = {**ws.headers, **MCP_HEADERS}
    deep = await http.post("/mcp", headers=headers, content=nested(1000))
    assert deep.status_code == 400
    initialize = json.dumps(MCP_INITIALIZE)
    deep_params = initialize.replace('"capabilities": {}', '"capabilities": {"x": ' + nested(1000) + "}")
    assert (await http.post("/mcp", headers=headers, content=deep_params)).status_code == 400
    # the OAuth registration endpoint (anonymous JSON) too
    registration = await http.post(
        "/register", content=nested(1000), headers={"Content-Type": "application/json"}
    )
    assert registration.status_code == 400 and registration.json()["error"] == "invalid_client_metadata"
    logged = capfd.readouterr().err
    assert "Traceback" not in logged and "request_failed" not in logged


async def test_mcp_tool_arguments_nested_deeper_than_the_limit_are_refused(
    mcp_session: Any, make_workspace: MakeWorkspace, capfd: pytest.CaptureFixture[str]
) -> None:
    """Within what the MCP parser takes (it refuses 200+ levels itself), deep tool arguments are invalid
    input like on REST, never an internal error."""
    ws = await make_workspace()
    deep: Any = "x"
    for _ in range(150):
        deep = [deep]
    async with mcp_session(ws.api_key) as client:
        result = await client.call_tool("create_lead", {"email": "deep@example.com", "custom": {"a": deep}})
        assert result.is_error
        assert result.structured_content["error"]["code"] == "invalid_input"
    logged = capfd.readouterr().err
    assert "Traceback" not in logged and "request_failed" not in logged
