"""The AI and website paths through both doors: MCP returns what REST returns for write_sequence and
draft_offer (the same scripted answers), the new tools' annotations say what they do, and another
workspace's campaign never reaches the AI. Isolation and roles of every new tool through REST and MCP (API
key and OAuth token) are generated from the catalogue (`FOREIGN` in tests/parity/<domain>.py, checked by
tests/test_isolation_and_roles.py); a refused member reaching no provider is in test_ai_key.py and
test_stripe.py."""

from __future__ import annotations

from typing import Any

import httpx

from tests.billing.conftest import Served
from tests.billing.servers import FakeAi, Website
from tests.billing.test_onboarding import DRAFT
from tests.billing.test_writing import campaign_with_profile, sequence_answer
from tests.conftest import MakeWorkspace
from tests.doors import ENDPOINTS, call_mcp, normalize, split_arguments

NEW_TOOLS = {
    "get_billing", "start_checkout", "open_billing_portal", "sync_billing", "set_dedicated_ips",
    "create_workspace", "save_onboarding", "draft_offer", "get_offer_profile", "save_offer_profile",
    "set_ai_key", "delete_ai_key", "write_sequence",
}  # fmt: skip


async def _rest(
    api: httpx.AsyncClient, headers: dict[str, str], tool: str, args: dict[str, Any]
) -> tuple[int, Any]:
    endpoint = ENDPOINTS[tool]
    path, query, body = split_arguments(endpoint, args)
    answer = await api.request(endpoint.method, f"/api/v1{path}", headers=headers, params=query, json=body)
    return answer.status_code, answer.json()


async def test_writing_and_website_drafts_are_the_same_through_both_doors(
    billing_app: Served,
    api: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    ai_server: FakeAi,
    website: Website,
) -> None:
    rest_ws, mcp_ws = await make_workspace(name="Doors"), await make_workspace(name="Doors")
    calls = []
    for ws in (rest_ws, mcp_ws):
        campaign = await campaign_with_profile(api, ws)
        calls.append(
            [
                ("write_sequence", {"id": campaign, "mode": "sequence", "steps": 2}, sequence_answer(2)),
                ("draft_offer", {"url": f"{website.url}/good"}, DRAFT),
            ]
        )
    rest_results = []
    for tool, args, answer in calls[0]:
        ai_server.reset(answer)
        status, body = await _rest(api, rest_ws.headers, tool, args)
        assert status == 200, body
        rest_results.append(body)
    async with billing_app.mcp(mcp_ws.api_key) as client:
        for (tool, args, answer), rest_body in zip(calls[1], rest_results, strict=True):
            ai_server.reset(answer)
            is_error, mcp_body = await call_mcp(client, tool, args)
            assert not is_error, mcp_body
            assert normalize(mcp_body) == normalize(rest_body), tool


async def test_the_new_tools_say_what_they_do(billing_app: Served, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    async with billing_app.mcp(ws.api_key) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools if t.name in NEW_TOOLS}
    assert set(tools) == NEW_TOOLS
    for name, tool in tools.items():
        assert tool.description and tool.description.split("\n\n")[0].rstrip().endswith("."), name
        hints = tool.annotations
        assert hints is not None and hints.title, name
        assert hints.read_only_hint == (name in ("get_billing", "get_offer_profile")), name
        for param, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), (name, param)
    reaching_out = {n for n, t in tools.items() if t.annotations and t.annotations.open_world_hint}
    assert reaching_out == {
        "start_checkout", "open_billing_portal", "sync_billing", "set_dedicated_ips", "draft_offer",
        "set_ai_key", "write_sequence",
    }  # fmt: skip
    replacing = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
    assert replacing == {
        "save_offer_profile", "set_ai_key", "delete_ai_key", "set_dedicated_ips", "save_onboarding"
    }  # fmt: skip


async def test_another_workspaces_campaign_never_reaches_the_ai(
    billing_app: Served, api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    """With an AI configured (the generated isolation test runs without one): their campaign, or their
    variant named in my campaign, is 404 before the AI is asked anything, and nothing of theirs changes."""
    mine, theirs = await make_workspace(), await make_workspace()
    my_campaign = await campaign_with_profile(api, mine)
    their_campaign = await campaign_with_profile(api, theirs)
    ai_server.reset(sequence_answer(1))
    their_variant = (
        await api.post(f"/api/v1/campaigns/{their_campaign}/write", headers=theirs.headers,
                       json={"mode": "sequence", "steps": 1})
    ).json()["created"][0]["variantId"]  # fmt: skip
    ai_server.reset(default=sequence_answer(1))
    attempts = [
        ("write_sequence", {"id": their_campaign, "mode": "sequence", "steps": 1}),
        ("write_sequence", {"id": their_campaign, "mode": "rewrite", "variantId": their_variant}),
        ("write_sequence", {"id": my_campaign, "mode": "rewrite", "variantId": their_variant}),
    ]
    for tool, args in attempts:
        status, body = await _rest(api, mine.headers, tool, args)
        assert status == 404 and body["error"]["code"] == "not_found", (tool, body)
    assert ai_server.requests == []
    steps = (await api.get(f"/api/v1/campaigns/{their_campaign}", headers=theirs.headers)).json()["steps"]
    assert [len(s["variants"]) for s in steps] == [1]
