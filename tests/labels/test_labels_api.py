"""Labels over real HTTP: CRUD, trigger validation, labelling through targets, isolation, roles."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp import Client

from mcp_server.server import api_key_principal_source, build_mcp
from outreach_core.labels.builtin import BUILTIN_LABELS
from tests.conftest import MakeWorkspace
from tests.lists.helpers import add_leads, call, carriers, new_label, new_list, ok, timers

NO_TRIGGERS = {"suppress": False, "moveToListId": None, "removeAfterDays": None, "applyLabel": None}


def made_here(labels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The labels a test made: without the built-in labels every workspace has (labels/builtin.py)."""
    builtin = {name for _, name, _ in BUILTIN_LABELS}
    return [x for x in labels if x["name"] not in builtin]


async def test_create_list_update_delete_labels(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    plain = await ok(http, ws, "POST", "/labels", {"name": " Maybe later "})
    assert plain["id"].startswith("lbl_")
    assert {k: v for k, v in plain.items() if k not in ("id", "createdAt")} == {
        "name": "Maybe later",
        "type": "neutral",
        "color": None,
        "triggers": NO_TRIGGERS,
        "leads": 0,
    }
    target_list = await new_list(http, ws, "Hot")
    full = await ok(
        http,
        ws,
        "POST",
        "/labels",
        {
            "name": "Hot lead",
            "type": "positive",
            "color": "#A1B2C3",
            "triggers": {
                "moveToListId": target_list,
                "removeAfterDays": 30,
                "applyLabel": {"labelId": plain["id"], "afterDays": 7},
            },
        },
    )
    assert full["color"] == "#a1b2c3" and full["type"] == "positive"
    assert full["triggers"] == {
        "suppress": False,
        "moveToListId": target_list,
        "removeAfterDays": 30,
        "applyLabel": {"labelId": plain["id"], "afterDays": 7},
    }

    status, body = await call(http, ws, "POST", "/labels", {"name": "Hot lead"})
    assert status == 409 and body["error"]["code"] == "conflict"

    # PATCH: absent keeps, null is refused where it cannot clear, color null clears, triggers replace
    same = await ok(http, ws, "PATCH", f"/labels/{full['id']}", {})
    assert same == full
    status, body = await call(http, ws, "PATCH", f"/labels/{full['id']}", {"name": None, "type": None})
    assert status == 422 and sorted(f["path"] for f in body["error"]["details"]["fields"]) == ["name", "type"]
    assert await ok(http, ws, "PATCH", f"/labels/{full['id']}", {}) == full  # nothing changed
    changed = await ok(
        http,
        ws,
        "PATCH",
        f"/labels/{full['id']}",
        {"type": "warning", "color": None, "triggers": {"suppress": True}},
    )
    assert changed == {
        **full,
        "type": "warning",
        "color": None,
        "triggers": {**NO_TRIGGERS, "suppress": True},
    }
    assert (await ok(http, ws, "PATCH", f"/labels/{full['id']}", {"name": "Keen"}))["name"] == "Keen"
    status, body = await call(http, ws, "PATCH", f"/labels/{full['id']}", {"name": "Maybe later"})
    assert status == 409
    status, body = await call(http, ws, "PATCH", "/labels/lbl_missing", {"name": "x"})
    assert status == 404 and body["error"]["code"] == "not_found"

    listing = made_here((await ok(http, ws, "GET", "/labels"))["labels"])
    assert [x["name"] for x in listing] == ["Maybe later", "Keen"]

    assert await ok(http, ws, "DELETE", f"/labels/{full['id']}") == {"ok": True}
    assert (await call(http, ws, "DELETE", f"/labels/{full['id']}"))[0] == 404
    assert [x["id"] for x in made_here((await ok(http, ws, "GET", "/labels"))["labels"])] == [plain["id"]]


async def test_label_input_is_validated(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    other = await new_label(http, ws, "Other")
    own = await new_label(http, ws, "Own")
    invalid = [
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 61},
        {"name": "x", "type": "happy"},
        {"name": "x", "color": "red"},
        {"name": "x", "color": "#12345"},
        {"name": "x", "triggers": {"removeAfterDays": 0}},
        {"name": "x", "triggers": {"removeAfterDays": 366}},
        {"name": "x", "triggers": {"applyLabel": {"labelId": other, "afterDays": 0}}},
        {"name": "x", "triggers": {"applyLabel": {"labelId": other}}},
        {"name": "x", "triggers": {"unknown": True}},
    ]
    for body in invalid:
        status, payload = await call(http, ws, "POST", "/labels", body)
        assert status == 422 and payload["error"]["code"] == "invalid_input", body
    for body in (
        {"name": "x", "triggers": {"moveToListId": "list_missing"}},
        {"name": "x", "triggers": {"applyLabel": {"labelId": "lbl_missing", "afterDays": 3}}},
    ):
        status, payload = await call(http, ws, "POST", "/labels", body)
        assert status == 404 and payload["error"]["code"] == "not_found", body

    status, payload = await call(
        http, ws, "PATCH", f"/labels/{own}", {"triggers": {"applyLabel": {"labelId": own, "afterDays": 1}}}
    )
    assert status == 422 and payload["error"]["details"]["fields"][0]["path"] == "triggers.applyLabel.labelId"
    listed = made_here((await ok(http, ws, "GET", "/labels"))["labels"])
    assert [x["name"] for x in listed] == ["Other", "Own"]


async def test_label_and_unlabel_through_targets(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    label = await new_label(http, ws, "Tagged")
    other_label = await new_label(http, ws, "Other")
    acme = await add_leads(ws, "ann@acme.test", "bob@acme.test", company="Acme")
    replied = await add_leads(ws, "cy@globex.test", status="replied")
    listed = await add_leads(ws, "dee@initech.test")
    list_id = await new_list(http, ws, "L")
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": listed}, "listId": list_id})

    async def label_(target: dict[str, Any], label_id: str = label) -> int:
        return int(
            (await ok(http, ws, "POST", "/leads/labels/add", {"target": target, "labelId": label_id}))[
                "labeled"
            ]
        )

    async def unlabel(target: dict[str, Any], label_id: str = label) -> int:
        body = {"target": target, "labelId": label_id}
        return int((await ok(http, ws, "POST", "/leads/labels/remove", body))["removed"])

    assert await label_({"ids": [acme[0], "lead_unknown"]}) == 1
    assert await label_({"ids": acme}) == 1
    assert await carriers(ws, label) == set(acme)
    assert await label_({"listId": list_id}) == 1
    assert await label_({"filter": {"status": ["replied"]}}) == 1
    assert await label_({"all": True}) == 0
    assert await unlabel({"filter": {"search": "acme"}}) == 2
    assert await label_({"filter": {"labelId": label}}, other_label) == 2
    assert await carriers(ws, other_label) == set(replied + listed)
    assert await label_({"filter": {"labelId": "none"}}, other_label) == 2  # the two acme leads
    counts = {x["name"]: x["leads"] for x in made_here((await ok(http, ws, "GET", "/labels"))["labels"])}
    assert counts == {"Tagged": 2, "Other": 4}
    assert await unlabel({"all": True}) == 2
    assert await unlabel({"all": True}) == 0

    for path in ("/leads/labels/add", "/leads/labels/remove"):
        status, body = await call(http, ws, "POST", path, {"target": {"all": True}, "labelId": "lbl_missing"})
        assert status == 404 and body["error"]["code"] == "not_found"
        status, body = await call(http, ws, "POST", path, {"target": {"all": True}})
        assert status == 422


async def test_delete_label_asks_with_the_impact_and_cleans_up(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Any
) -> None:
    ws = await make_workspace()
    doomed = await new_label(http, ws, "Doomed")
    applier = await new_label(
        http,
        ws,
        "Applier",
        triggers={"applyLabel": {"labelId": doomed, "afterDays": 2}, "removeAfterDays": 9},
    )
    lead_ids = await add_leads(ws, "a@dl.test", "b@dl.test", "c@dl.test")
    await ok(http, ws, "POST", "/leads/labels/add", {"target": {"ids": lead_ids}, "labelId": doomed})
    await ok(http, ws, "POST", "/leads/labels/add", {"target": {"ids": lead_ids[:1]}, "labelId": applier})
    assert len(await timers(ws)) == 2  # apply Doomed after 2 days, remove Applier after 9

    server = build_mcp(runtime, api_key_principal_source(ws.api_key))
    async with Client(server) as client:
        refused = await client.call_tool("delete_label", {"id": doomed})
        error = refused.structured_content["error"]
        assert refused.is_error and error["code"] == "confirmation_required"
        assert "“Doomed”" in error["message"] and "3 leads carry it" in error["message"]
        assert "“Applier”" in error["message"]
        done = await client.call_tool("delete_label", {"id": doomed, "confirm": True})
        assert not done.is_error, done.structured_content

    assert await carriers(ws, doomed) == set()
    remaining = await timers(ws)
    assert [(t[1], t[2]) for t in remaining] == [(applier, "remove")]
    applier_now = next(x for x in (await ok(http, ws, "GET", "/labels"))["labels"] if x["id"] == applier)
    assert applier_now["triggers"]["applyLabel"] is None and applier_now["triggers"]["removeAfterDays"] == 9
    assert applier_now["leads"] == 1


@pytest.mark.parametrize("role", ["admin", "member"])
async def test_every_role_manages_labels(
    role: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    caller = await owner.add_member(role)
    lead = (await add_leads(owner, f"{role}@roles.test"))[0]
    label = await new_label(http, caller, f"By {role}", type="negative")
    await ok(http, caller, "PATCH", f"/labels/{label}", {"color": "#ff0000"})
    body = {"target": {"ids": [lead]}, "labelId": label}
    assert (await ok(http, caller, "POST", "/leads/labels/add", body))["labeled"] == 1
    assert (await ok(http, caller, "POST", "/leads/labels/remove", body))["removed"] == 1
    assert await ok(http, caller, "DELETE", f"/labels/{label}") == {"ok": True}
