"""Every MCP tool returns the same JSON as its REST route, and no workspace can see or change another's
data through either door."""

from __future__ import annotations

import importlib
from typing import Any

import httpx
import pytest

from outreach_core.labels.builtin import BUILTIN_NAMES
from tests.conftest import MakeWorkspace
from tests.doors import ENDPOINTS, call_mcp, call_rest, normalize
from tests.parity.common import Prepare, invitation, member_id, new_key, new_label, new_list

DOMAINS = sorted({e.operation.__module__.split(".")[1] for e in ENDPOINTS.values()})
"""The domain packages with tools; each has its parity cases in `tests/parity/<domain>.py`."""


def _cases(domain: str) -> dict[str, Prepare]:
    try:
        module = importlib.import_module(f"tests.parity.{domain}")
    except ModuleNotFoundError as exc:
        if exc.name != f"tests.parity.{domain}":
            raise
        return {}
    cases: dict[str, Prepare] = module.CASES
    return cases


PARITY_CASES: dict[str, Prepare] = {tool: case for domain in DOMAINS for tool, case in _cases(domain).items()}


def test_every_tool_has_a_parity_case() -> None:
    assert set(ENDPOINTS) == set(PARITY_CASES)
    in_their_domain = {(d, tool) for d in DOMAINS for tool in _cases(d)}
    assert in_their_domain == {(e.operation.__module__.split(".")[1], e.name) for e in ENDPOINTS.values()}


def _strip_volatile(value: Any) -> Any:
    """lastUsedAt changes with every authenticated call, and `ms` (how long a request took) with every
    request, so only their presence is compared."""
    if isinstance(value, dict):
        return {
            k: ("<set>" if k in ("lastUsedAt", "ms") and v is not None else _strip_volatile(v))
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


async def test_workspaces_cannot_reach_each_other(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    their_member = await theirs.add_member("member")
    their_key = await new_key(http, theirs, "theirs")
    their_invite = await invitation(http, theirs, "their-invite@example.com")
    their_member_id = await member_id(http, theirs, their_member.user_id)
    their_list, their_label = await new_list(http, theirs), await new_label(http, theirs)
    attempts = [
        ("revoke_api_key", {"id": their_key["id"], "confirm": True}),
        ("delete_invitation", {"id": their_invite}),
        ("update_member", {"id": their_member_id, "role": "owner"}),
        ("remove_member", {"id": their_member_id, "confirm": True}),
        ("update_list", {"id": their_list, "name": "hijacked"}),
        ("delete_list", {"id": their_list, "confirm": True}),
        ("add_leads_to_list", {"target": {"all": True}, "listId": their_list}),
        ("remove_leads_from_list", {"target": {"all": True}, "listId": their_list}),
        ("update_label", {"id": their_label, "name": "hijacked"}),
        ("delete_label", {"id": their_label, "confirm": True}),
        ("label_leads", {"target": {"all": True}, "labelId": their_label}),
        ("unlabel_leads", {"target": {"all": True}, "labelId": their_label}),
    ]
    async with mcp_session(mine.api_key) as client:
        for tool, args in attempts:
            status, body = await call_rest(http, mine.headers, tool, args)
            assert status == 404 and body["error"]["code"] == "not_found", (tool, body)
            is_error, mcp_body = await call_mcp(client, tool, args)
            assert is_error and mcp_body["error"]["code"] == "not_found", (tool, mcp_body)

        for tool in ("list_api_keys", "list_members", "list_lists", "list_labels"):
            _, rest_view = await call_rest(http, mine.headers, tool, {})
            _, mcp_view = await call_mcp(client, tool, {})
            text = str(rest_view) + str(mcp_view)
            assert (
                their_key["id"] not in text
                and their_member.user_id not in text
                and theirs.user_id not in text
                and their_list not in text
                and their_label not in text
            )

    # their things are untouched
    assert (
        await http.get("/api/v1/me", headers={"Authorization": f"Bearer {their_key['key']}"})
    ).status_code == 200
    assert (await http.get("/api/v1/me", headers=their_member.headers)).json()["role"] == "member"
    invites = (await http.get("/api/v1/members", headers=theirs.headers)).json()["invitations"]
    assert [i["id"] for i in invites] == [their_invite]
    their_lists = (await http.get("/api/v1/lists", headers=theirs.headers)).json()["lists"]
    their_labels = (await http.get("/api/v1/labels", headers=theirs.headers)).json()["labels"]
    assert [x["id"] for x in their_lists] == [their_list] and their_lists[0]["name"] != "hijacked"
    their_labels = [
        x for x in their_labels if x["name"] not in BUILTIN_NAMES
    ]  # theirs, not the built-in ones
    assert [x["id"] for x in their_labels] == [their_label] and their_labels[0]["name"] != "hijacked"
