"""Campaign CRUD over real HTTP: create, read, update (every field, validated), duplicate, delete, list."""

from __future__ import annotations

import httpx

from tests.campaigns.helpers import add_lead, add_mailbox, call, new_campaign, ok
from tests.conftest import MakeWorkspace


async def test_a_new_campaign_is_a_draft_with_one_empty_email(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    created = await ok(http, ws, "POST", "/campaigns", {"name": "  Founders Q1  "})
    assert set(created) == {"id"} and created["id"].startswith("cmp_")
    campaign = await ok(http, ws, "GET", f"/campaigns/{created['id']}")
    assert campaign["name"] == "Founders Q1" and campaign["status"] == "draft"
    assert len(campaign["steps"]) == 1
    step = campaign["steps"][0]
    assert step["position"] == 0 and len(step["variants"]) == 1
    assert step["variants"][0] | {"id": None} == {
        "id": None,
        "label": "A",
        "subject": "",
        "body": "",
        "weight": 1,
        "active": True,
    }
    assert campaign["mailboxIds"] == [] and campaign["activeMailboxes"] == 0
    assert campaign["leadCounts"]["total"] == 0 and campaign["leadCounts"]["not_contacted"] == 0
    assert campaign["reached"] == [0]
    assert campaign["timezoneFallback"] == "UTC"
    assert (campaign["windowStart"], campaign["windowEnd"], campaign["days"]) == (540, 1020, 31)
    assert campaign["workspace"]["id"] == ws.workspace_id
    assert campaign["workspace"]["unsubscribeMode"] == "link"
    assert campaign["startedAt"] is None and campaign["createdAt"].endswith("Z")

    default = await ok(http, ws, "POST", "/campaigns", {})
    assert (await ok(http, ws, "GET", f"/campaigns/{default['id']}"))["name"] == "New campaign"
    blank_somewhere = (
        {"name": "\u0085"},
        {"name": " \ufeff "},
        {"name": "\u001c"},
    )  # blank to some regex engines
    for bad in (
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 201},
        {"name": "x", "extra": 1},
        *blank_somewhere,
    ):
        status, body = await call(http, ws, "POST", "/campaigns", bad)
        assert status == 422 and body["error"]["code"] == "invalid_input", bad


async def test_update_changes_only_given_fields_and_validates_them(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    campaign_id = await new_campaign(http, ws)
    box_a = await add_mailbox(ws, "a@sender.test")
    box_b = await add_mailbox(ws, "b@sender.test", status="paused")
    changes = {
        "name": "Renamed",
        "mailboxIds": [box_a, box_b, box_a],
        "timezoneFallback": "Europe/Paris",
        "windowStart": 480,
        "windowEnd": 1080,
        "days": 127,
        "dailyCap": 40,
        "bounceThreshold": 3.5,
        "espMatching": True,
        "stopOnReply": False,
        "trackClicks": True,
        "trackOpens": True,
        "startOn": "2026-12-01",
        "endOn": "2026-12-31",
        "stopForCompany": True,
        "skipRisky": True,
    }
    updated = await ok(http, ws, "PATCH", f"/campaigns/{campaign_id}", changes)
    for key, value in changes.items():
        if key != "mailboxIds":
            assert updated[key] == value, key
    assert sorted(updated["mailboxIds"]) == sorted([box_a, box_b])
    assert updated["activeMailboxes"] == 1
    assert updated["updatedAt"] >= updated["createdAt"]

    partial = await ok(
        http, ws, "PATCH", f"/campaigns/{campaign_id}", {"dailyCap": None, "mailboxIds": [box_b]}
    )
    assert partial["dailyCap"] is None and partial["mailboxIds"] == [box_b]
    assert partial["name"] == "Renamed" and partial["windowStart"] == 480 and partial["activeMailboxes"] == 0

    bad_bodies = [
        {"windowStart": -1},
        {"windowEnd": 1441},
        {"windowStart": 1080},  # after the stored end (1080)
        {"windowStart": 600, "windowEnd": 600},
        {"days": 0},
        {"days": 128},
        {"timezoneFallback": "Mars/Olympus"},
        {"startOn": "2026-13-01"},
        {"startOn": "2027-01-05"},  # after the stored endOn
        {"startOn": "2026-12-10", "endOn": "2026-12-09"},
        {"dailyCap": 0},
        {"bounceThreshold": 101},
        {"bounceThreshold": -1},
        {"name": None},
        {"espMatching": "yes"},
        {"mailboxIds": "mbx"},
    ]
    before = await ok(http, ws, "GET", f"/campaigns/{campaign_id}")
    for bad in bad_bodies:
        status, body = await call(http, ws, "PATCH", f"/campaigns/{campaign_id}", bad)
        assert status == 422 and body["error"]["code"] == "invalid_input", (bad, body)
    after = await ok(http, ws, "GET", f"/campaigns/{campaign_id}")
    assert after == before

    other = await make_workspace()
    foreign_box = await add_mailbox(other, "x@foreign.test")
    status, body = await call(
        http, ws, "PATCH", f"/campaigns/{campaign_id}", {"mailboxIds": [box_a, foreign_box]}
    )
    assert status == 404 and body["error"]["details"]["mailboxIds"] == [foreign_box]
    assert (await ok(http, ws, "GET", f"/campaigns/{campaign_id}"))["mailboxIds"] == [box_b]


async def test_duplicate_copies_sequence_schedule_and_mailboxes_but_no_leads(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    campaign_id = await new_campaign(http, ws, "Original")
    box = await add_mailbox(ws, "a@dup.test")
    await ok(
        http, ws, "PATCH", f"/campaigns/{campaign_id}", {"mailboxIds": [box], "days": 3, "skipRisky": True}
    )
    sequence = {
        "steps": [
            {"variants": [{"subject": "Hi {{first_name}}", "body": "Hello"}, {"subject": "B", "body": "B"}]},
            {"waitDays": 4, "sameThread": False, "variants": [{"subject": "Again", "body": "Bump"}]},
        ]
    }
    original = await ok(http, ws, "PUT", f"/campaigns/{campaign_id}/sequence", sequence)
    lead = await add_lead(ws, "lead@dup.test")
    await ok(http, ws, "POST", f"/campaigns/{campaign_id}/leads", {"leadIds": [lead]})

    copy_id = (await ok(http, ws, "POST", f"/campaigns/{campaign_id}/duplicate"))["id"]
    assert copy_id != campaign_id
    copy = await ok(http, ws, "GET", f"/campaigns/{copy_id}")
    assert copy["name"] == "Original (copy)" and copy["status"] == "draft"
    assert copy["mailboxIds"] == [box] and copy["days"] == 3 and copy["skipRisky"] is True
    assert copy["leadCounts"]["total"] == 0

    def shape(campaign: dict[str, object]) -> list[object]:
        return [
            (s["waitDays"], s["sameThread"], [(v["subject"], v["body"], v["weight"]) for v in s["variants"]])  # type: ignore[index]
            for s in campaign["steps"]  # type: ignore[attr-defined]
        ]

    assert shape(copy) == shape(original)
    copied_ids = {v["id"] for s in copy["steps"] for v in s["variants"]} | {s["id"] for s in copy["steps"]}
    original_ids = {v["id"] for s in original["steps"] for v in s["variants"]} | {
        s["id"] for s in original["steps"]
    }
    assert not copied_ids & original_ids


async def test_delete_removes_the_campaign_but_keeps_its_leads(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    campaign_id = await new_campaign(http, ws)
    lead = await add_lead(ws, "stays@delete.test")
    await ok(http, ws, "POST", f"/campaigns/{campaign_id}/leads", {"leadIds": [lead]})
    assert await ok(http, ws, "DELETE", f"/campaigns/{campaign_id}") == {"ok": True}
    assert (await call(http, ws, "GET", f"/campaigns/{campaign_id}"))[0] == 404
    assert (await call(http, ws, "DELETE", f"/campaigns/{campaign_id}"))[0] == 404
    assert (await ok(http, ws, "GET", f"/leads/{lead}"))["email"] == "stays@delete.test"


async def test_list_is_newest_first_with_lead_counts_and_a_status_filter(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    first = await new_campaign(http, ws, "First")
    second = await new_campaign(http, ws, "Second")
    leads = [await add_lead(ws, f"l{i}@list.test") for i in range(3)]
    await ok(http, ws, "POST", f"/campaigns/{first}/leads", {"leadIds": leads})
    await ok(http, ws, "POST", f"/campaigns/{first}/steps", {})
    listing = await ok(http, ws, "GET", "/campaigns")
    assert [c["id"] for c in listing["campaigns"]] == [second, first]
    item = listing["campaigns"][1]
    assert item["leadCounts"]["total"] == 3 and item["leadCounts"]["not_contacted"] == 3
    assert item["steps"] == 2 and item["mailboxes"] == 0 and item["status"] == "draft"
    assert (await ok(http, ws, "GET", "/campaigns", params={"status": ["running"]}))["campaigns"] == []
    drafts = await ok(http, ws, "GET", "/campaigns", params={"status": ["draft", "paused"]})
    assert len(drafts["campaigns"]) == 2
    status, _ = await call(http, ws, "GET", "/campaigns", params={"status": ["sleeping"]})
    assert status == 422


async def test_text_no_database_can_store_is_refused(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    for raw in (b'{"name": "bad \\ud800 half"}', b'{"name": "nul \\u0000"}'):
        response = await http.post(
            "/api/v1/campaigns", headers={**ws.headers, "Content-Type": "application/json"}, content=raw
        )
        assert response.status_code == 422, raw
        assert response.json()["error"]["details"]["fields"][0]["path"] == "name"
    assert (await ok(http, ws, "GET", "/campaigns"))["campaigns"] == []
