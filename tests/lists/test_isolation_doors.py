"""Every list, label and suppression tool, through REST and MCP, with another workspace's ids: 404 or
nothing selected, and their data unchanged."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import MakeWorkspace
from tests.doors import call_mcp, call_rest
from tests.lists.helpers import (
    add_leads,
    carriers,
    members_of,
    new_label,
    new_list,
    ok,
    statuses,
    suppressed_values,
)

# (tool, arguments built from their ids, what a call from the other workspace gives)
NOT_FOUND = "not_found"


async def test_every_tool_keeps_workspaces_apart(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    their_list = await new_list(http, theirs, "Theirs")
    their_label = await new_label(http, theirs, "Theirs", triggers={"suppress": True})
    their_leads = await add_leads(theirs, "a@them.test", "b@them.test")
    await ok(http, theirs, "POST", "/leads/lists/add", {"target": {"ids": their_leads}, "listId": their_list})
    await ok(
        http,
        theirs,
        "POST",
        "/leads/labels/add",
        {"target": {"ids": their_leads[:1]}, "labelId": their_label},
    )
    await ok(http, theirs, "POST", "/suppressions", {"entries": ["kept.test"], "reason": "theirs"})
    their_suppressions = await suppressed_values(theirs)

    my_list = await new_list(http, mine, "Mine")
    my_label = await new_label(http, mine, "Mine")
    by_id = {"ids": their_leads}
    by_list = {"listId": their_list}
    by_label = {"filter": {"labelId": their_label}}
    not_found = [
        ("update_list", {"id": their_list, "name": "x"}),
        ("delete_list", {"id": their_list, "confirm": True}),
        ("add_leads_to_list", {"target": {"all": True}, "listId": their_list}),
        ("remove_leads_from_list", {"target": {"all": True}, "listId": their_list}),
        ("update_label", {"id": their_label, "name": "x"}),
        ("delete_label", {"id": their_label, "confirm": True}),
        ("label_leads", {"target": {"all": True}, "labelId": their_label}),
        ("unlabel_leads", {"target": {"all": True}, "labelId": their_label}),
        ("create_label", {"name": "Sneaky", "triggers": {"moveToListId": their_list}}),
        (
            "create_label",
            {"name": "Sneaky", "triggers": {"applyLabel": {"labelId": their_label, "afterDays": 1}}},
        ),
    ]
    nothing = [
        ("add_leads_to_list", {"target": target, "listId": my_list}, {"added": 0})
        for target in (by_id, by_list, by_label)
    ]
    nothing += [
        ("remove_leads_from_list", {"target": by_id, "listId": my_list}, {"removed": 0}),
        ("label_leads", {"target": by_id, "labelId": my_label}, {"labeled": 0}),
        ("label_leads", {"target": by_list, "labelId": my_label}, {"labeled": 0}),
        ("unlabel_leads", {"target": by_id, "labelId": my_label}, {"removed": 0}),
        ("suppress_leads", {"target": by_id}, {"suppressed": 0}),
        ("suppress_leads", {"target": by_label}, {"suppressed": 0}),
        ("remove_suppressions", {"entries": ["kept.test"]}, {"removed": 0}),
    ]

    async with mcp_session(mine.api_key) as client:
        for tool, args in not_found:
            status, body = await call_rest(http, mine.headers, tool, args)
            assert status == 404 and body["error"]["code"] == NOT_FOUND, (tool, args, body)
            is_error, mcp_body = await call_mcp(client, tool, args)
            assert is_error and mcp_body["error"]["code"] == NOT_FOUND, (tool, args, mcp_body)
        for tool, args, expected in nothing:
            status, body = await call_rest(http, mine.headers, tool, args)
            assert (status, body) == (200, expected), (tool, args)
            is_error, mcp_body = await call_mcp(client, tool, args)
            assert (is_error, mcp_body) == (False, expected), (tool, args)
        for tool in ("list_lists", "list_labels", "list_suppressions"):
            _, rest_view = await call_rest(http, mine.headers, tool, {})
            _, mcp_view = await call_mcp(client, tool, {})
            text = str(rest_view) + str(mcp_view)
            assert their_list not in text and their_label not in text and "kept.test" not in text, tool
        # adding the same entries here changes nothing there
        args = {"entries": ["kept.test", "a@them.test"]}
        assert (await call_rest(http, mine.headers, "add_suppressions", args))[1]["added"] == 2
        assert (await call_mcp(client, "add_suppressions", args))[1]["existing"] == 2

    assert await members_of(theirs, their_list) == set(their_leads)
    assert await carriers(theirs, their_label) == set(their_leads[:1])
    assert await suppressed_values(theirs) == their_suppressions
    assert await statuses(theirs, their_leads) == ["suppressed", "active"]
    lists = (await ok(http, theirs, "GET", "/lists"))["lists"]
    labels = (await ok(http, theirs, "GET", "/labels"))["labels"]
    assert [(x["name"], x["leads"]) for x in lists] == [("Theirs", 2)]
    made = [x for x in labels if x["name"] == "Theirs"]  # next to the built-in labels (labels/builtin.py)
    assert [(x["name"], x["leads"], x["triggers"]["suppress"]) for x in made] == [("Theirs", 1, True)]
    assert all(x["leads"] == 0 for x in labels if x["name"] != "Theirs")
