"""`POST /leads/verify` and the `verify_leads` tool, through both doors over real HTTP."""

from __future__ import annotations

from typing import Any

import httpx

from outreach_core.targets.schemas import LeadTarget, TargetIn
from outreach_core.verification.operations import verify_leads
from tests.conftest import MakeWorkspace
from tests.doors import call_mcp, call_rest
from tests.verification.conftest import MakeRuntime
from tests.verification.helpers import add_leads, add_list, states, unique


async def test_needs_an_active_plan_on_both_doors(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    ws = await make_workspace(plan=None)
    [lead] = await add_leads(ws, [f"jane@{unique('plan')}"], verify_status="unknown")
    args = {"target": {"all": True}}
    status, body = await call_rest(http, ws.headers, "verify_leads", args)
    assert status == 402 and body["error"]["code"] == "plan_required"
    async with mcp_session(ws.api_key) as client:
        is_error, result = await call_mcp(client, "verify_leads", args)
    assert is_error and result["error"]["code"] == "plan_required"
    assert (await states(ws, [lead]))[0].status == "unknown"


async def test_targets_pick_the_leads_to_queue(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    domain = unique("target")
    unknown = await add_leads(ws, [f"u{i}@{domain}" for i in range(3)], verify_status="unknown")
    valid = await add_leads(ws, [f"v{i}@{domain}" for i in range(2)], verify_status="valid")
    listed = await add_list(ws, [unknown[0], valid[0]])

    async def queue(target: dict[str, Any]) -> dict[str, Any]:
        response = await http.post("/api/v1/leads/verify", headers=ws.headers, json={"target": target})
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    assert await queue({"ids": [unknown[1], "lead_missing"]}) == {"queued": 1, "api": False}
    assert [s.status for s in await states(ws, unknown)] == ["unknown", "verifying", "unknown"]
    assert await queue({"filter": {"verify": ["valid"]}}) == {"queued": 2, "api": False}
    assert await queue({"listId": listed}) == {"queued": 2, "api": False}
    assert await queue({"all": True}) == {"queued": 5, "api": False}
    found = await states(ws, unknown + valid)
    assert {(s.status, s.reason, s.api) for s in found} == {("verifying", None, False)}


async def test_bad_targets_are_refused(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    for body in ({"target": {}}, {"target": {"all": True, "ids": ["x"]}}, {}, {"target": {"ids": []}}):
        response = await http.post("/api/v1/leads/verify", headers=ws.headers, json=body)
        assert response.status_code == 422, (body, response.text)
        assert response.json()["error"]["code"] == "invalid_input"


async def test_mcp_queues_like_rest(make_workspace: MakeWorkspace, mcp_session: Any) -> None:
    ws = await make_workspace()
    leads = await add_leads(ws, [f"m{i}@{unique('mcp')}" for i in range(3)], verify_status="invalid")
    async with mcp_session(ws.api_key) as client:
        result = await call_mcp(client, "verify_leads", {"target": {"filter": {"verify": ["invalid"]}}})
    assert result == (False, {"queued": 3, "api": False})
    assert {s.status for s in await states(ws, leads)} == {"verifying"}


async def test_api_flag_follows_the_verifier_configuration(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime
) -> None:
    ws = await make_workspace()
    leads = await add_leads(ws, [f"a{i}@{unique('api')}" for i in range(2)], verify_status="unknown")
    body = TargetIn(target=LeadTarget(ids=leads))
    principal = await ws.principal()
    with_api = await make_runtime(api=True).execute(principal, verify_leads, body)
    assert (with_api.queued, with_api.api) == (2, True)
    assert {(s.status, s.api) for s in await states(ws, leads)} == {("verifying", True)}
    without = await make_runtime(api=False).execute(principal, verify_leads, body)
    assert (without.queued, without.api) == (2, False)
    assert {(s.status, s.api) for s in await states(ws, leads)} == {("verifying", False)}
