"""How a failed tool call looks to an MCP client: always the service's `{code, message, details}`, from the
one place the MCP door translates errors (`OutreachMCP.call_tool`)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mcp import Client

from mcp_server.server import api_key_principal_source, build_mcp
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.errors import Conflict
from outreach_core.kernel.wire import Ok, WireModel
from tests.conftest import MakeWorkspace

SECRET = "db-password-hunter2"


class BoomIn(WireModel):
    count: int


async def crash(ctx: WorkspaceContext) -> Ok:
    """Fails with an unexpected exception."""
    raise RuntimeError(SECRET)


async def refuse(ctx: WorkspaceContext, body: BoomIn) -> Ok:
    """Fails with one of the service's errors."""
    raise Conflict("Already there.", {"count": body.count})


ENDPOINTS = [
    Endpoint("POST", "/crash", crash, Ok),
    Endpoint("POST", "/refuse", refuse, Ok, body=BoomIn),
]


async def test_tool_errors_reach_the_client_in_the_service_format(
    runtime: Any, make_workspace: MakeWorkspace, caplog: pytest.LogCaptureFixture
) -> None:
    ws = await make_workspace()
    server = build_mcp(runtime, api_key_principal_source(ws.api_key), endpoints=ENDPOINTS)
    async with Client(server) as client:
        with caplog.at_level(logging.ERROR, logger="outreach.mcp"):
            crashed = await client.call_tool("crash", {})
        refused = await client.call_tool("refuse", {"count": 3})
        invalid = await client.call_tool("refuse", {"count": "three"})
        unknown = await client.call_tool("refuse", {"count": 3, "colour": "red"})

    assert crashed.is_error and crashed.structured_content is not None
    error = crashed.structured_content["error"]
    assert error["code"] == "internal" and SECRET not in str(crashed.content)
    reference = error["details"]["reference"]
    assert [r.reference for r in caplog.records if r.getMessage() == "tool failed"] == [reference]  # type: ignore[attr-defined]

    assert refused.is_error and refused.structured_content == {
        "error": {"code": "conflict", "message": "Already there.", "details": {"count": 3}}
    }
    assert invalid.is_error and invalid.structured_content is not None
    assert invalid.structured_content["error"]["code"] == "invalid_input"
    assert unknown.is_error and unknown.structured_content is not None
    assert unknown.structured_content["error"]["code"] == "invalid_input"
    assert unknown.structured_content["error"]["details"]["fields"] == [
        {"path": "colour", "message": "Extra inputs are not permitted"}
    ]
