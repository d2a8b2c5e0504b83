"""Sequence editing over real HTTP: steps, variants, the whole sequence, limits, sanitization, states."""

from __future__ import annotations

from typing import Any

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaigns
from tests.campaigns.helpers import call, new_campaign, ok
from tests.conftest import MakeWorkspace, WorkspaceHandle


async def set_status(ws: WorkspaceHandle, campaign_id: str, status: str) -> None:
    async def change(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            scoped(ctx, campaigns).update().where(campaigns.c.id == campaign_id).values(status=status)
        )

    await ws.runtime.execute(await ws.principal(), change)


def steps_of(campaign: dict[str, Any]) -> list[list[str]]:
    return [[v["subject"] for v in s["variants"]] for s in campaign["steps"]]


async def test_steps_are_added_at_the_end_updated_moved_and_deleted(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    campaign = await ok(http, ws, "POST", f"/campaigns/{cid}/steps", {"waitDays": 2, "sameThread": False})
    assert [(s["position"], s["waitDays"], s["sameThread"]) for s in campaign["steps"]][1] == (1, 2, False)
    assert len(campaign["steps"][1]["variants"]) == 1
    campaign = await ok(http, ws, "POST", f"/campaigns/{cid}/steps", {})
    third = campaign["steps"][2]
    assert (third["waitDays"], third["sameThread"]) == (3, True)

    assert await ok(http, ws, "PATCH", f"/campaigns/{cid}/steps/{third['id']}", {"waitDays": 7}) == {
        "ok": True
    }
    ids = [s["id"] for s in (await ok(http, ws, "GET", f"/campaigns/{cid}"))["steps"]]
    assert (await ok(http, ws, "GET", f"/campaigns/{cid}"))["steps"][2]["waitDays"] == 7
    for bad in ({"waitDays": -1}, {"waitDays": 366}, {"sameThread": 1}):
        assert (await call(http, ws, "PATCH", f"/campaigns/{cid}/steps/{third['id']}", bad))[0] == 422

    moved = await ok(http, ws, "POST", f"/campaigns/{cid}/steps/{ids[2]}/move", {"to": 0})
    assert [s["id"] for s in moved["steps"]] == [ids[2], ids[0], ids[1]]
    assert [s["position"] for s in moved["steps"]] == [0, 1, 2]
    to_the_end = await ok(http, ws, "POST", f"/campaigns/{cid}/steps/{ids[2]}/move", {"to": 9})
    assert [s["id"] for s in to_the_end["steps"]] == [ids[0], ids[1], ids[2]]  # past the last: the end
    assert (await ok(http, ws, "POST", f"/campaigns/{cid}/steps/{ids[2]}/move", {"to": 0}))["steps"][0][
        "id"
    ] == ids[2]

    after = await ok(http, ws, "DELETE", f"/campaigns/{cid}/steps/{ids[0]}")
    assert [s["id"] for s in after["steps"]] == [ids[2], ids[1]]
    assert [s["position"] for s in after["steps"]] == [0, 1]
    assert (await call(http, ws, "DELETE", f"/campaigns/{cid}/steps/{ids[0]}"))[0] == 404


async def test_step_and_variant_limits(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    for _ in range(9):
        await ok(http, ws, "POST", f"/campaigns/{cid}/steps", {})
    status, body = await call(http, ws, "POST", f"/campaigns/{cid}/steps", {})
    assert status == 409 and body["error"]["code"] == "conflict" and "10 steps" in body["error"]["message"]
    campaign = await ok(http, ws, "GET", f"/campaigns/{cid}")
    assert len(campaign["steps"]) == 10

    step = campaign["steps"][0]
    for _ in range(4):
        campaign = await ok(http, ws, "POST", f"/campaigns/{cid}/steps/{step['id']}/variants", {})
    assert [v["label"] for v in campaign["steps"][0]["variants"]] == ["A", "B", "C", "D", "E"]
    status, body = await call(http, ws, "POST", f"/campaigns/{cid}/steps/{step['id']}/variants", {})
    assert status == 409 and "5 variants" in body["error"]["message"]

    only_step = await new_campaign(http, ws)
    lone = (await ok(http, ws, "GET", f"/campaigns/{only_step}"))["steps"][0]
    status, body = await call(http, ws, "DELETE", f"/campaigns/{only_step}/steps/{lone['id']}")
    assert status == 409 and "at least one step" in body["error"]["message"]
    status, body = await call(
        http, ws, "DELETE", f"/campaigns/{only_step}/variants/{lone['variants'][0]['id']}"
    )
    assert status == 409 and "at least one variant" in body["error"]["message"]
    status, body = await call(
        http, ws, "PATCH", f"/campaigns/{only_step}/variants/{lone['variants'][0]['id']}", {"active": False}
    )
    assert status == 409 and "active variant" in body["error"]["message"]

    too_many = {"steps": [{"variants": [{"subject": "s", "body": "b"}]}] * 11}
    assert (await call(http, ws, "PUT", f"/campaigns/{only_step}/sequence", too_many))[0] == 422
    six = {"steps": [{"variants": [{"subject": "s", "body": "b"}] * 6}]}
    assert (await call(http, ws, "PUT", f"/campaigns/{only_step}/sequence", six))[0] == 422
    none_active = {"steps": [{"variants": [{"subject": "s", "body": "b", "active": False}]}]}
    assert (await call(http, ws, "PUT", f"/campaigns/{only_step}/sequence", none_active))[0] == 422
    empty = {"steps": []}
    assert (await call(http, ws, "PUT", f"/campaigns/{only_step}/sequence", empty))[0] == 422
    assert len((await ok(http, ws, "GET", f"/campaigns/{only_step}"))["steps"]) == 1


async def test_variants_copy_update_and_delete(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    step = (await ok(http, ws, "GET", f"/campaigns/{cid}"))["steps"][0]
    a = step["variants"][0]["id"]
    saved = await ok(
        http,
        ws,
        "PATCH",
        f"/campaigns/{cid}/variants/{a}",
        {
            "subject": "Quick question,\r\n {{first_name}}",
            "body": "Hi {{first_name|there}},\n\nShort note.",
            "weight": 3,
        },
    )
    assert saved == {"ok": True, "body": "<p>Hi {{first_name|there}},</p><p>Short note.</p>"}
    campaign = await ok(http, ws, "POST", f"/campaigns/{cid}/steps/{step['id']}/variants", {"copyFrom": a})
    a_row, b_row = campaign["steps"][0]["variants"]
    assert b_row["label"] == "B" and b_row["id"] != a
    assert (b_row["subject"], b_row["body"], b_row["weight"]) == (a_row["subject"], a_row["body"], 3)
    assert a_row["subject"] == "Quick question, {{first_name}}"  # no line break can reach a header
    status, _ = await call(
        http, ws, "POST", f"/campaigns/{cid}/steps/{step['id']}/variants", {"copyFrom": "var_x"}
    )
    assert status == 404

    for bad in ({"weight": 0}, {"weight": 101}, {"subject": "x" * 501}, {"active": "no"}):
        assert (await call(http, ws, "PATCH", f"/campaigns/{cid}/variants/{a}", bad))[0] == 422
    await ok(http, ws, "PATCH", f"/campaigns/{cid}/variants/{a}", {"active": False})
    status, _ = await call(http, ws, "PATCH", f"/campaigns/{cid}/variants/{b_row['id']}", {"active": False})
    assert status == 409
    status, body = await call(http, ws, "DELETE", f"/campaigns/{cid}/variants/{b_row['id']}")
    assert status == 409 and "active variant" in body["error"]["message"]
    after = await ok(http, ws, "DELETE", f"/campaigns/{cid}/variants/{a}")
    assert [(v["id"], v["label"]) for v in after["steps"][0]["variants"]] == [(b_row["id"], "A")]


async def test_bodies_are_sanitized_on_save_and_keep_variables_and_spintax(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    variant = (await ok(http, ws, "GET", f"/campaigns/{cid}"))["steps"][0]["variants"][0]["id"]
    dirty = (
        '<p onclick="steal()">{Hi|Hello {there|friend}} {{first_name|there}}</p>'
        "<script>alert(1)</script>"
        '<a href="javascript:alert(1)">bad</a> <a href="https://example.com/{{company}}">good</a>'
        '<img src="x" onerror="steal()">'
    )
    saved = (await ok(http, ws, "PATCH", f"/campaigns/{cid}/variants/{variant}", {"body": dirty}))["body"]
    for gone in ("<script", "alert(1)", "onclick", "onerror", "javascript:"):
        assert gone not in saved, (gone, saved)
    for kept in (
        "{Hi|Hello {there|friend}}",
        "{{first_name|there}}",
        'href="https://example.com/{{company}}"',
    ):
        assert kept in saved, (kept, saved)
    stored = (await ok(http, ws, "GET", f"/campaigns/{cid}"))["steps"][0]["variants"][0]["body"]
    assert stored == saved

    replaced = await ok(
        http,
        ws,
        "PUT",
        f"/campaigns/{cid}/sequence",
        {"steps": [{"variants": [{"subject": "S", "body": dirty}]}]},
    )
    assert replaced["steps"][0]["variants"][0]["body"] == saved


async def test_set_sequence_replaces_everything_and_keeps_given_ids(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    first = (await ok(http, ws, "GET", f"/campaigns/{cid}"))["steps"][0]
    body = {
        "steps": [
            {
                "id": first["id"],
                "variants": [
                    {"id": first["variants"][0]["id"], "subject": "One A", "body": "a"},
                    {"subject": "One B", "body": "b", "weight": 2, "active": False},
                ],
            },
            {"waitDays": 5, "sameThread": False, "variants": [{"subject": "Two", "body": "c"}]},
        ]
    }
    campaign = await ok(http, ws, "PUT", f"/campaigns/{cid}/sequence", body)
    assert steps_of(campaign) == [["One A", "One B"], ["Two"]]
    assert campaign["steps"][0]["id"] == first["id"]
    assert campaign["steps"][0]["variants"][0]["id"] == first["variants"][0]["id"]
    assert campaign["steps"][0]["variants"][1]["active"] is False
    assert (campaign["steps"][1]["waitDays"], campaign["steps"][1]["sameThread"]) == (5, False)

    other = await new_campaign(http, ws)
    foreign_step = (await ok(http, ws, "GET", f"/campaigns/{other}"))["steps"][0]["id"]
    bad = {"steps": [{"id": foreign_step, "variants": [{"subject": "x", "body": "y"}]}]}
    status, answer = await call(http, ws, "PUT", f"/campaigns/{cid}/sequence", bad)
    assert status == 404 and answer["error"]["code"] == "not_found"
    assert answer["error"]["details"] == {"id": foreign_step, "path": "steps.0.id"}
    twice = {
        "steps": [{"id": first["id"], "variants": [{"body": "x"}]}, {"id": first["id"], "variants": [{}]}]
    }
    assert (await call(http, ws, "PUT", f"/campaigns/{cid}/sequence", twice))[0] == 422
    assert steps_of(await ok(http, ws, "GET", f"/campaigns/{cid}")) == [["One A", "One B"], ["Two"]]


async def test_position_changes_only_while_draft_or_paused(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    campaign = await ok(http, ws, "POST", f"/campaigns/{cid}/steps", {})
    first, second = campaign["steps"]
    sequence = {"steps": [{"variants": [{"subject": "x", "body": "y"}]}]}
    for status_now in ("running", "completed"):
        await set_status(ws, cid, status_now)
        for method, path, body in (
            ("PUT", f"/campaigns/{cid}/sequence", sequence),
            ("DELETE", f"/campaigns/{cid}/steps/{second['id']}", None),
            ("POST", f"/campaigns/{cid}/steps/{second['id']}/move", {"to": 0}),
        ):
            status, answer = await call(http, ws, method, path, body)
            assert status == 409 and answer["error"]["code"] == "invalid_state", (status_now, path)
            assert answer["error"]["details"] == {"status": status_now}
        # text edits and new follow-ups still work
        variant = first["variants"][0]["id"]
        await ok(http, ws, "PATCH", f"/campaigns/{cid}/variants/{variant}", {"subject": f"now {status_now}"})
    assert len((await ok(http, ws, "POST", f"/campaigns/{cid}/steps", {}))["steps"]) == 3
    await set_status(ws, cid, "paused")
    assert len((await ok(http, ws, "PUT", f"/campaigns/{cid}/sequence", sequence))["steps"]) == 1
