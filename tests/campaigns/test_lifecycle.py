"""Launch checklist and the campaign state machine over real HTTP, plus the lifecycle worker's rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_leads, campaigns, outbox
from tests.campaigns.helpers import add_lead, add_mailbox, call, new_campaign, ok
from tests.campaigns.test_sequence import set_status
from tests.conftest import MakeWorkspace, WorkspaceHandle
from workers import campaigns as campaigns_worker

READY_SEQUENCE = {
    "steps": [
        {"variants": [{"subject": "Hi {{first_name|there}}", "body": "Short note.\n\n{{unsubscribe}}"}]},
        {"waitDays": 3, "variants": [{"subject": "", "body": "Following up."}]},
    ]
}


async def ready_campaign(http: httpx.AsyncClient, ws: WorkspaceHandle) -> str:
    cid = await new_campaign(http, ws)
    box = await add_mailbox(ws, f"sender-{cid[-6:].lower()}@ready.test")
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", {"mailboxIds": [box]})
    await ok(http, ws, "PUT", f"/campaigns/{cid}/sequence", READY_SEQUENCE)
    lead = await add_lead(ws, f"lead-{cid[-6:].lower()}@ready.test", first_name="Ada")
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [lead]})
    return cid


def items_by_id(checklist: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in checklist["items"]}


async def events(ws: WorkspaceHandle, kind: str) -> list[dict[str, Any]]:
    async def read(ctx: WorkspaceContext) -> list[dict[str, Any]]:
        rows = await ctx.conn.execute(
            scoped(ctx, outbox).select(outbox.c.payload).where(outbox.c.kind == kind)
        )
        return [r.payload for r in rows.all()]

    return await ws.runtime.read(await ws.principal(), read)


async def test_checklist_of_a_new_campaign_names_every_missing_piece(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan=None)
    cid = await new_campaign(http, ws)
    checklist = await ok(http, ws, "GET", f"/campaigns/{cid}/checklist")
    assert checklist["canLaunch"] is False
    items = items_by_id(checklist)
    failing_required = {i for i, item in items.items() if item["required"] and not item["ok"]}
    assert failing_required == {"mailboxes", "sequence", "unsubscribe", "leads", "plan"}
    assert items["sequence"]["details"] == ["Email 1A has no subject.", "Email 1A has no body."]
    assert items["schedule"]["ok"] and items["variables"]["ok"] and items["link_domain"]["ok"]
    assert all(item["message"] for item in items.values() if not item["ok"])
    assert all(item["message"] is None for item in items.values() if item["ok"])


async def test_checklist_reports_content_problems_and_warnings(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await ready_campaign(http, ws)
    assert (await ok(http, ws, "GET", f"/campaigns/{cid}/checklist"))["canLaunch"] is True

    long_body = " ".join(["word"] * 260)
    sequence = {
        "steps": [
            {
                "variants": [
                    {"subject": "Free money {{first_name}}", "body": "Hi {{industry}} {{ {{unsubscribe}}"},
                    {"subject": "B", "body": f"{long_body} {{{{unsubscribe}}}}"},
                ]
            },
            {"sameThread": False, "variants": [{"subject": "", "body": "Act now {{favourite_colour|}}"}]},
        ]
    }
    await ok(http, ws, "PUT", f"/campaigns/{cid}/sequence", sequence)
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", {"trackOpens": True, "endOn": "2020-01-01"})
    await add_lead(ws, "risky@ready.test", verify="risky")
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"allLeads": True})
    checklist = await ok(http, ws, "GET", f"/campaigns/{cid}/checklist")
    items = items_by_id(checklist)
    assert checklist["canLaunch"] is False
    assert items["sequence"]["details"] == ["Email 2A has no subject."]  # not a same-thread follow-up
    assert items["unsubscribe"]["ok"]
    variable_details = items["variables"]["details"]
    assert "Email 1A: unknown variable {{industry}}" in variable_details
    assert "Email 2A: unknown variable {{favourite_colour}}" in variable_details
    assert any(d.startswith("Email 1A: ") and "{{" in d and "unknown" not in d for d in variable_details)
    assert items["schedule"]["details"] == ["endOn (2020-01-01) has passed."]
    assert not items["risky_leads"]["ok"] and "1 risky" in items["risky_leads"]["message"]
    assert not items["tracking_link_domain"]["ok"]
    assert "free" in items["spam_words"]["details"] and "act now" in items["spam_words"]["details"]
    assert items["long_emails"]["details"] == ["Email 1B (261 words)"]
    assert not any(
        items[w]["required"] for w in ("risky_leads", "tracking_link_domain", "spam_words", "long_emails")
    )

    # a custom field that a campaign lead has is a known variable (any case or underscore style)
    await add_lead(ws, "custom@ready.test", custom={"Industry": "Retail", "favouriteColour": "red"})
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"allLeads": True})
    variable_details = items_by_id(await ok(http, ws, "GET", f"/campaigns/{cid}/checklist"))["variables"][
        "details"
    ]
    assert not any("unknown variable" in d for d in variable_details)


async def test_launch_and_pause_follow_the_state_machine(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await ready_campaign(http, ws)
    launched = await ok(http, ws, "POST", f"/campaigns/{cid}/launch")
    assert launched["status"] == "running" and {i["id"] for i in launched["items"]} >= {"mailboxes", "plan"}
    campaign = await ok(http, ws, "GET", f"/campaigns/{cid}")
    assert campaign["status"] == "running" and campaign["startedAt"] is not None
    started = campaign["startedAt"]

    status, body = await call(http, ws, "POST", f"/campaigns/{cid}/launch")
    assert status == 409 and body["error"]["code"] == "invalid_state"

    assert await ok(http, ws, "POST", f"/campaigns/{cid}/pause") == {"status": "paused"}
    paused = await events(ws, "campaign.paused")
    assert [e["data"] for e in paused] == [
        {"campaign": {"id": cid, "name": "Outbound"}, "reason": "Paused by a person.", "cause": "person"}
    ]
    assert await ok(http, ws, "POST", f"/campaigns/{cid}/pause") == {"status": "paused"}  # no-op, no event
    assert len(await events(ws, "campaign.paused")) == 1
    assert (await ok(http, ws, "GET", f"/campaigns/{cid}"))["pausedReason"] is None

    assert (await ok(http, ws, "POST", f"/campaigns/{cid}/launch"))["status"] == "running"
    assert (await ok(http, ws, "GET", f"/campaigns/{cid}"))["startedAt"] == started

    draft = await new_campaign(http, ws)
    status, body = await call(http, ws, "POST", f"/campaigns/{draft}/pause")
    assert status == 409 and body["error"]["details"] == {"status": "draft"}
    await set_status(ws, draft, "completed")
    for action in ("pause", "launch"):
        status, body = await call(http, ws, "POST", f"/campaigns/{draft}/{action}")
        assert status == 409 and body["error"]["code"] == "invalid_state"


async def test_launch_is_refused_with_the_failing_items_and_nothing_changes(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    before = await ok(http, ws, "GET", f"/campaigns/{cid}")
    status, body = await call(http, ws, "POST", f"/campaigns/{cid}/launch")
    assert status == 409 and body["error"]["code"] == "launch_blocked"
    assert {i["id"] for i in body["error"]["details"]["items"]} == {
        "mailboxes",
        "sequence",
        "unsubscribe",
        "leads",
    }
    assert all(not i["ok"] and i["required"] for i in body["error"]["details"]["items"])
    assert await ok(http, ws, "GET", f"/campaigns/{cid}") == before

    unpaid = await make_workspace(plan=None)
    unpaid_campaign = await ready_campaign(http, unpaid)
    status, body = await call(http, unpaid, "POST", f"/campaigns/{unpaid_campaign}/launch")
    assert status == 402 and body["error"]["code"] == "plan_required"
    assert (await ok(http, unpaid, "GET", f"/campaigns/{unpaid_campaign}"))["status"] == "draft"


async def test_a_paused_mailbox_blocks_launch(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    cid = await ready_campaign(http, ws)
    paused_box = await add_mailbox(ws, "paused@ready.test", status="paused")
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", {"mailboxIds": [paused_box]})
    item = items_by_id(await ok(http, ws, "GET", f"/campaigns/{cid}/checklist"))["mailboxes"]
    assert not item["ok"] and "paused" in item["message"]


async def set_campaign_lead_status(ws: WorkspaceHandle, campaign_id: str, status: str) -> None:
    async def change(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .update()
            .where(campaign_leads.c.campaign_id == campaign_id)
            .values(status=status, step=2)
        )

    await ws.runtime.execute(await ws.principal(), change)


async def test_lifecycle_worker_completes_finished_campaigns_and_pauses_after_end_on(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    finished = await ready_campaign(http, ws)
    ended = await ready_campaign(http, ws)
    still_going = await ready_campaign(http, ws)
    for cid in (finished, ended, still_going):
        await ok(http, ws, "POST", f"/campaigns/{cid}/launch")
    await set_campaign_lead_status(ws, finished, "completed")
    yesterday = (datetime.now(UTC) - timedelta(days=2)).date().isoformat()

    async def end(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            scoped(ctx, campaigns).update().where(campaigns.c.id == ended).values(end_on=yesterday)
        )

    await ws.runtime.execute(await ws.principal(), end)
    assert await campaigns_worker.tick(ws.runtime) >= 2

    done = await ok(http, ws, "GET", f"/campaigns/{finished}")
    assert done["status"] == "completed" and done["completedAt"] is not None
    assert done["leadCounts"]["completed"] == 1 and done["reached"] == [1, 1]
    paused = await ok(http, ws, "GET", f"/campaigns/{ended}")
    assert (
        paused["status"] == "paused"
        and paused["pausedReason"] == f"The last sending day ({yesterday}) has passed."
    )
    paused = await events(ws, "campaign.paused")
    assert [(e["data"]["campaign"]["id"], e["data"]["cause"]) for e in paused] == [(ended, "end_on")]
    assert (await ok(http, ws, "GET", f"/campaigns/{still_going}"))["status"] == "running"

    # new leads reopen a completed campaign as paused, ready to launch again
    lead = await add_lead(ws, "late@ready.test")
    await ok(http, ws, "POST", f"/campaigns/{finished}/leads", {"leadIds": [lead]})
    reopened = await ok(http, ws, "GET", f"/campaigns/{finished}")
    assert reopened["status"] == "paused" and reopened["completedAt"] is None


@pytest.mark.parametrize("mode", ["link", "reply_text"])
async def test_unsubscribe_item_follows_the_workspace_mode(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mode: str
) -> None:
    ws = await make_workspace()
    await ok(http, ws, "PATCH", "/settings/sending", {"unsubscribeMode": mode})
    cid = await ready_campaign(http, ws)
    item = items_by_id(await ok(http, ws, "GET", f"/campaigns/{cid}/checklist"))["unsubscribe"]
    assert item["ok"] and ("reply" in item["label"]) == (mode == "reply_text")
