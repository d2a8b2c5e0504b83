"""Lead lists over real HTTP: CRUD, membership through every kind of target, isolation, roles."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp import Client

from mcp_server.server import api_key_principal_source, build_mcp
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads
from outreach_core.kernel.errors import NotFound
from outreach_core.lists.store import resolve_import_list
from outreach_core.targets.list_members import add_to_list
from tests.conftest import MakeWorkspace
from tests.lists.helpers import add_leads, call, lists_of, members_of, new_label, new_list, ok


async def test_create_list_and_rename_and_delete(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    created = await ok(http, ws, "POST", "/lists", {"name": "  Founders  "})
    assert created["name"] == "Founders" and created["leads"] == 0
    assert created["id"].startswith("list_") and created["createdAt"].endswith("Z")
    other = await ok(http, ws, "POST", "/lists", {"name": "Agencies"})

    status, body = await call(http, ws, "POST", "/lists", {"name": "Founders"})
    assert status == 409 and body["error"]["code"] == "conflict"
    for bad in ("", "   ", "x" * 121):
        status, body = await call(http, ws, "POST", "/lists", {"name": bad})
        assert status == 422 and body["error"]["code"] == "invalid_input", bad
    assert (await call(http, ws, "POST", "/lists", {"name": "x", "extra": 1}))[0] == 422

    renamed = await ok(http, ws, "PATCH", f"/lists/{created['id']}", {"name": "Founders EU"})
    assert renamed == {**created, "name": "Founders EU"}
    assert (await ok(http, ws, "PATCH", f"/lists/{created['id']}", {"name": "Founders EU"}))[
        "name"
    ] == "Founders EU"
    status, body = await call(http, ws, "PATCH", f"/lists/{created['id']}", {"name": "Agencies"})
    assert status == 409 and body["error"]["code"] == "conflict"
    status, body = await call(http, ws, "PATCH", "/lists/list_missing", {"name": "Whatever"})
    assert status == 404 and body["error"]["code"] == "not_found"

    listing = await ok(http, ws, "GET", "/lists")
    assert [x["name"] for x in listing["lists"]] == ["Founders EU", "Agencies"]

    assert await ok(http, ws, "DELETE", f"/lists/{other['id']}") == {"ok": True}
    assert (await call(http, ws, "DELETE", f"/lists/{other['id']}"))[0] == 404
    assert [x["id"] for x in (await ok(http, ws, "GET", "/lists"))["lists"]] == [created["id"]]


async def test_lead_counts_per_list(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    a = await new_list(http, ws, "A")
    b = await new_list(http, ws, "B")
    empty = await new_list(http, ws, "Empty")
    ids = await add_leads(ws, "one@count.test", "two@count.test", "three@count.test")
    assert (await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": ids}, "listId": a}))[
        "added"
    ] == 3
    assert (await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": ids[:1]}, "listId": b}))[
        "added"
    ] == 1
    counts = {x["id"]: x["leads"] for x in (await ok(http, ws, "GET", "/lists"))["lists"]}
    assert counts == {a: 3, b: 1, empty: 0}


async def test_add_and_remove_through_every_target(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    acme = await add_leads(ws, "ann@acme.test", "bob@acme.test", company="Acme")
    globex = await add_leads(ws, "cy@globex.test", company="Globex")
    won = await add_leads(ws, "dee@initech.test", status="won")
    everyone = acme + globex + won
    source = await new_list(http, ws, "Source")
    target = await new_list(http, ws, "Target")

    async def add(target_obj: dict[str, Any], list_id: str = target) -> int:
        body = {"target": target_obj, "listId": list_id}
        return int((await ok(http, ws, "POST", "/leads/lists/add", body))["added"])

    async def remove(target_obj: dict[str, Any], list_id: str = target) -> int:
        body = {"target": target_obj, "listId": list_id}
        return int((await ok(http, ws, "POST", "/leads/lists/remove", body))["removed"])

    # ids: unknown ids select nothing; repeats are not counted
    assert await add({"ids": [acme[0], "lead_unknown"]}) == 1
    assert await add({"ids": [acme[0]]}) == 0
    assert await members_of(ws, target) == {acme[0]}
    assert await remove({"ids": [acme[0], acme[1]]}) == 1
    assert await members_of(ws, target) == set()

    # listId
    assert await add({"ids": [acme[1], won[0]]}, source) == 2
    assert await add({"listId": source}) == 2
    assert await members_of(ws, target) == {acme[1], won[0]}
    assert await remove({"listId": source}) == 2

    # filter: search (company), status, both
    assert await add({"filter": {"search": "acme"}}) == 2
    assert await members_of(ws, target) == set(acme)
    assert await add({"filter": {"status": ["won"]}}) == 1
    assert await remove({"filter": {"search": "acme", "status": ["active"]}}) == 2
    assert await members_of(ws, target) == set(won)
    assert await add({"filter": {"listId": source, "status": ["active"]}}) == 1  # acme[1]

    # all
    assert await add({"all": True}) == len(everyone) - 2
    assert await members_of(ws, target) == set(everyone)
    assert await remove({"all": True}) == len(everyone)
    assert await members_of(ws, target) == set()
    assert await members_of(ws, source) == {acme[1], won[0]}  # another list is untouched

    # the leads themselves stay
    listing = await ok(http, ws, "GET", "/lists")
    assert {x["name"]: x["leads"] for x in listing["lists"]} == {"Source": 2, "Target": 0}


async def test_membership_refusals(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    list_id = await new_list(http, ws, "L")
    lead = (await add_leads(ws, "x@refuse.test"))[0]
    for path in ("/leads/lists/add", "/leads/lists/remove"):
        status, body = await call(
            http, ws, "POST", path, {"target": {"ids": [lead]}, "listId": "list_missing"}
        )
        assert status == 404 and body["error"]["code"] == "not_found"
        for bad in (
            {"target": {}, "listId": list_id},
            {"target": {"ids": [lead], "all": True}, "listId": list_id},
            {"target": {"ids": []}, "listId": list_id},
            {"target": {"all": False}, "listId": list_id},
            {"target": {"all": True}},
            {"target": {"ids": ["x"] * 10_001}, "listId": list_id},
        ):
            status, body = await call(http, ws, "POST", path, bad)
            assert status == 422 and body["error"]["code"] == "invalid_input", (path, bad)
    assert await members_of(ws, list_id) == set()


async def test_deleting_a_list_keeps_its_leads_and_switches_off_move_triggers(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Any
) -> None:
    ws = await make_workspace()
    doomed = await new_list(http, ws, "Doomed")
    keep = await new_list(http, ws, "Keep")
    lead_ids = await add_leads(ws, "a@del.test", "b@del.test")
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": lead_ids}, "listId": doomed})
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": lead_ids[:1]}, "listId": keep})
    mover = await new_label(http, ws, "Mover", triggers={"moveToListId": doomed, "suppress": True})

    server = build_mcp(runtime, api_key_principal_source(ws.api_key))
    async with Client(server) as client:
        refused = await client.call_tool("delete_list", {"id": doomed})
        assert refused.is_error
        error = refused.structured_content["error"]
        assert error["code"] == "confirmation_required"
        assert "“Doomed”" in error["message"] and "2 leads" in error["message"]
        assert "stay in the workspace" in error["message"] and "“Mover”" in error["message"]
        missing = await client.call_tool("delete_list", {"id": "list_missing", "confirm": True})
        assert missing.is_error and missing.structured_content["error"]["code"] == "not_found"
        done = await client.call_tool("delete_list", {"id": doomed, "confirm": True})
        assert not done.is_error and done.structured_content == {"ok": True}

    rows = await _lead_count(ws, lead_ids)
    assert rows == 2
    assert await lists_of(ws, lead_ids[0]) == {keep}
    label = next(x for x in (await ok(http, ws, "GET", "/labels"))["labels"] if x["id"] == mover)
    assert label["triggers"]["moveToListId"] is None and label["triggers"]["suppress"] is True


async def _lead_count(ws: Any, ids: list[str]) -> int:
    async def count(ctx: WorkspaceContext) -> int:
        t = scoped(ctx, leads)
        return len((await ctx.conn.execute(t.select(leads.c.id).where(leads.c.id.in_(ids)))).all())

    return int(await ws.runtime.read(await ws.principal(), count))


async def test_resolve_import_list_and_add_to_list(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    existing = await new_list(http, ws, "Existing")
    principal = await ws.principal()
    rt = ws.runtime

    assert await rt.execute(principal, resolve_import_list, existing, None) == (existing, "Existing")
    assert await rt.execute(principal, resolve_import_list, None, " Existing ") == (existing, "Existing")
    new_id, name = await rt.execute(principal, resolve_import_list, None, "Fresh")
    assert name == "Fresh" and new_id != existing
    assert await rt.execute(principal, resolve_import_list, None, "Fresh") == (new_id, "Fresh")
    with pytest.raises(NotFound):
        await rt.execute(principal, resolve_import_list, "list_missing", None)

    ids = await add_leads(ws, "p@add.test", "q@add.test", "r@add.test")

    async def add(ctx: WorkspaceContext, chosen: list[str]) -> int:
        return await add_to_list(
            ctx, new_id, scoped(ctx, leads).select(leads.c.id).where(leads.c.id.in_(chosen))
        )

    assert await rt.execute(principal, add, ids[:2]) == 2
    assert await rt.execute(principal, add, ids) == 1
    assert await members_of(ws, new_id) == set(ids)


@pytest.mark.parametrize("role", ["admin", "member"])
async def test_every_role_manages_lists(
    role: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    caller = await owner.add_member(role)
    lead = (await add_leads(owner, f"{role}@roles.test"))[0]
    list_id = await new_list(http, caller, f"By {role}")
    await ok(http, caller, "PATCH", f"/lists/{list_id}", {"name": f"Renamed by {role}"})
    assert (
        await ok(http, caller, "POST", "/leads/lists/add", {"target": {"ids": [lead]}, "listId": list_id})
    )["added"] == 1
    body = {"target": {"ids": [lead]}, "listId": list_id}
    assert (await ok(http, caller, "POST", "/leads/lists/remove", body))["removed"] == 1
    assert await ok(http, caller, "DELETE", f"/lists/{list_id}") == {"ok": True}
