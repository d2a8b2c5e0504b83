"""Every MCP tool returns the same JSON as its REST route (that no workspace can see or change another's
data through either door is tests/test_isolation_and_roles.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import MakeWorkspace
from tests.doors import ENDPOINTS, call_mcp, call_rest, normalize
from tests.parity.cases import DOMAINS, PARITY_CASES, cases_of, domain_of


def test_every_tool_has_a_parity_case() -> None:
    assert set(ENDPOINTS) == set(PARITY_CASES)
    in_their_domain = {(d, tool) for d in DOMAINS for tool in cases_of(d, "CASES")}
    assert in_their_domain == {(domain_of(tool), tool) for tool in ENDPOINTS}


def _strip_volatile(value: Any) -> Any:
    """lastUsedAt changes with every authenticated call, and `ms` and `durationMs` (how long a request or a
    domain check took) with every request, so only their presence is compared."""
    if isinstance(value, dict):
        return {
            k: ("<set>" if k in ("lastUsedAt", "ms", "durationMs") and v is not None else _strip_volatile(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
    return value


@pytest.mark.parametrize("tool", sorted(PARITY_CASES))
async def test_mcp_returns_what_rest_returns(
    tool: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    ws = await make_workspace()
    prepare = PARITY_CASES[tool]
    rest_args, mcp_args = await prepare(http, ws), await prepare(http, ws)
    async with mcp_session(ws.api_key) as client:
        for rest_input, mcp_input in zip(rest_args, mcp_args, strict=True):
            status, rest_body = await call_rest(http, ws.headers, tool, rest_input)
            is_error, mcp_body = await call_mcp(client, tool, mcp_input)
            assert is_error == (status >= 400), (tool, rest_input, rest_body, mcp_body)
            assert normalize(_strip_volatile(mcp_body)) == normalize(_strip_volatile(rest_body)), (
                tool,
                rest_input,
            )
