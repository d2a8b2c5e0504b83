"""Generated from the catalogue: every tool keeps workspaces apart, and every tool above the member role
refuses lower roles, through both doors (REST with an API key; MCP with an API key and with an OAuth access
token).

Isolation: each `tests/parity/<domain>.py` gives, beside its parity cases, `FOREIGN`: for every tool of its
domain, the arguments with which one workspace names another's objects (a tool without one fails
`test_every_tool_has_a_foreign_case`, and a case must name their object in every id argument the tool has).
Called with them, a tool answers exactly as for ids that name nothing (the same arguments with fresh ids):
404 `not_found` for a path id or a single object named in a body, nothing selected where a target or filter
names it; a path id is always 404. The answer shows no id or address of theirs that the caller did not
send, and nothing stored in their workspace changes.

Roles: each tool whose `Endpoint.role` is above member is called with its parity case's first arguments by
every lower role (403 `forbidden`, `details.required` the allowed roles, nothing stored changes; MCP tools
that ask to confirm refuse before asking), then succeeds for its own role.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import ROLE_RANK
from outreach_core.kernel.endpoint import ROLES
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.doors import ENDPOINTS
from tests.isolation import (
    DOORS,
    Answer,
    comparable,
    doors,
    id_inputs,
    identifying_values,
    paths_holding,
    person,
    replaced,
    shown_in,
    stored_rows,
    strings,
)
from tests.parity.cases import DOMAINS, FOREIGN_CASES, PARITY_CASES, cases_of, domain_of

ELEVATED = sorted(name for name, e in ENDPOINTS.items() if e.role != "member")


def test_every_tool_has_a_foreign_case() -> None:
    """A new tool is isolated for free once its domain's parity module names another workspace's
    objects for it; without that entry this fails."""
    assert set(ENDPOINTS) - set(FOREIGN_CASES) == set(), "tools without a foreign case"
    assert set(FOREIGN_CASES) - set(ENDPOINTS) == set(), "foreign cases of no tool"
    in_their_domain = {(d, tool) for d in DOMAINS for tool in cases_of(d, "FOREIGN")}
    assert in_their_domain == {(domain_of(tool), tool) for tool in ENDPOINTS}


def test_every_role_above_member_is_tested() -> None:
    assert ELEVATED, "no tool above the member role: the role test would test nothing"
    assert all(PARITY_CASES[tool] for tool in ELEVATED)


async def test_tools_say_who_may_call_them(make_workspace: MakeWorkspace, mcp_session: Any) -> None:
    """What the model reading the tool list sees: every description ends with the tool's role."""
    ws = await make_workspace()
    async with mcp_session(ws.api_key) as client:
        tools = {t.name: t.description or "" for t in (await client.list_tools()).tools}
    assert set(tools) == set(ENDPOINTS)
    assert tools["update_member"].endswith("\n\nOnly owners may call this.")
    assert tools["create_webhook"].endswith("\n\nOnly owners and admins may call this.")
    assert all(tools[name].endswith(ENDPOINTS[name].role_sentence) for name in tools)
    member_tools = [name for name, e in ENDPOINTS.items() if e.role == "member"]
    assert all(tools[name].endswith("Any member of the workspace may call this.") for name in member_tools)


def _with_confirm(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {**args, "confirm": True} if ENDPOINTS[tool].confirm is not None else dict(args)


def _refused_only_for(answer: Answer, paths: set[str]) -> bool:
    """Not refused as invalid input, or only for arguments holding their ids (`set_sequence` refuses ids
    of steps that are not the campaign's as input, foreign or missing alike)."""
    if answer.code != "invalid_input":
        return True
    refused = {
        ".".join(part for part in f["path"].split(".") if not part.isdigit())
        for f in answer.body["error"]["details"]["fields"]
    }
    return refused <= paths


@pytest.mark.parametrize("tool", sorted(FOREIGN_CASES))
async def test_another_workspaces_objects_are_out_of_reach(
    tool: str, http: httpx.AsyncClient, runtime: Runtime, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    endpoint = ENDPOINTS[tool]
    mine, theirs = await make_workspace(), await make_workspace()
    me = await person(runtime, mine)
    case = FOREIGN_CASES[tool]
    arg_sets = {door: await case(http, mine, theirs) for door in DOORS}
    before = await stored_rows(runtime, theirs.workspace_id)
    their_ids, their_texts = identifying_values(before)
    mine_ids, mine_texts = identifying_values(await stored_rows(runtime, mine.workspace_id))
    theirs_only = (their_ids | their_texts) - mine_ids - mine_texts  # parity data reuses some addresses
    named: set[str] = set()

    def assert_nothing_of_theirs(answer: Answer, args: dict[str, Any]) -> None:
        shown = shown_in(answer.body, theirs_only - strings(args))
        assert not shown, (tool, args, "their data in the answer", shown, answer)

    async with doors(http, mcp_session, me) as door:
        for name in DOORS:
            for args in arg_sets[name]:
                holding = paths_holding(args, their_ids)
                named |= holding
                foreign = await door.call(name, tool, _with_confirm(tool, args))
                # input refused for another reason than their ids would answer the same for any ids
                assert _refused_only_for(foreign, holding), (
                    name,
                    args,
                    "the case's arguments are invalid",
                    foreign,
                )
                assert_nothing_of_theirs(foreign, args)
                if holding & set(endpoint.path_params):
                    assert (foreign.status, foreign.code) == (404, "not_found"), (name, args, foreign)
                if not holding:
                    continue
                fresh: dict[str, str] = {}
                missing = replaced(args, their_ids, fresh)
                twin = await door.call(name, tool, _with_confirm(tool, missing))
                same = comparable(foreign, fresh), comparable(twin, fresh.values())
                assert same[0] == same[1], (name, args, foreign, twin)
                if name != "rest" and endpoint.confirm is not None:
                    # asking the person to confirm shows nothing of theirs either
                    unconfirmed = await door.call(name, tool, args)
                    assert_nothing_of_theirs(unconfirmed, args)
                    unconfirmed_twin = await door.call(name, tool, missing)
                    same = comparable(unconfirmed, fresh), comparable(unconfirmed_twin, fresh.values())
                    assert same[0] == same[1], (name, args, unconfirmed, unconfirmed_twin)

    assert await stored_rows(runtime, theirs.workspace_id) == before, "their workspace changed"
    uncovered = id_inputs(endpoint) - named
    assert not uncovered, f"{tool}: the foreign case names none of their objects in {sorted(uncovered)}"


@pytest.mark.parametrize("tool", ELEVATED)
async def test_lower_roles_are_refused(
    tool: str, http: httpx.AsyncClient, runtime: Runtime, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    endpoint = ENDPOINTS[tool]
    owner = await make_workspace()
    lower = [r for r in ROLES if ROLE_RANK[r] < ROLE_RANK[endpoint.role]]
    allowed = owner if endpoint.role == "owner" else await owner.add_member(endpoint.role)
    people = {role: await person(runtime, await owner.add_member(role)) for role in lower}
    prepare = PARITY_CASES[tool]
    refused_args = {(role, name): (await prepare(http, owner))[0] for role in lower for name in DOORS}
    before = await stored_rows(runtime, owner.workspace_id)

    for role, who in people.items():
        async with doors(http, mcp_session, who) as door:
            for name in DOORS:
                args = refused_args[role, name]
                calls = [_with_confirm(tool, args)]
                if name != "rest" and endpoint.confirm is not None:
                    calls.append(args)  # refused before the person is asked to confirm
                for arguments in calls:
                    answer = await door.call(name, tool, arguments)
                    assert (answer.status, answer.code) == (403, "forbidden"), (role, name, answer)
                    details = answer.body["error"]["details"]
                    assert details == {"required": endpoint.roles, "role": role}, (role, name, details)
    assert await stored_rows(runtime, owner.workspace_id) == before, "a refused call changed something"

    async with doors(http, mcp_session, await person(runtime, allowed)) as door:
        for name in DOORS:
            args = (await prepare(http, owner))[0]
            answer: Answer = await door.call(name, tool, _with_confirm(tool, args))
            assert answer.status < 400, (endpoint.role, name, answer)
