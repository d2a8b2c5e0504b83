"""Every event kind the service emits today, produced by its real cause and received by a real endpoint with
the payload docs/webhooks.md documents. (`lead.replied`, and the inbox's `lead.labeled`, `lead.bounced` and
`lead.unsubscribed`, come from the inbox worker of issue 17; `test_webhook` sends the documented
`lead.replied` sample, tested in test_api.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaigns
from outreach_core.kernel.ports import FixedClock
from outreach_core.mail.links import unsubscribe_url
from tests.campaigns.helpers import add_lead, ok
from tests.campaigns.test_lifecycle import ready_campaign
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import launched_campaign, rows, smtp_mailbox
from tests.webhooks.conftest import CreateHook, MakeRuntime, run_worker
from tests.webhooks.receiver import Endpoint, Receiver
from workers import campaigns as campaigns_worker
from workers import label_timers, sender

ALL = ["lead.replied", "lead.labeled", "lead.bounced", "lead.unsubscribed", "lead.won", "campaign.paused"]


async def _subscribed(
    ws: WorkspaceHandle, create_hook: CreateHook, receiver: Receiver, clock: FixedClock
) -> Endpoint:
    ep = receiver.endpoint(now=lambda: clock.now().timestamp())
    ep.secrets = [(await create_hook(ws, ep.url, ALL))["secret"]]
    return ep


def _bodies(receiver: Receiver, ep: Endpoint, kind: str) -> list[dict[str, Any]]:
    got = [r for r in receiver.at(ep) if r.headers["service-event-type"] == kind]
    assert all(r.verified and r.json["type"] == kind and r.json["test"] is False for r in got)
    return [r.json for r in got]


def _lead(lead_id: str, email: str, status: str, **names: Any) -> dict[str, Any]:
    return {
        "id": lead_id,
        "email": email,
        "firstName": names.get("firstName"),
        "lastName": names.get("lastName"),
        "company": names.get("company"),
        "status": status,
    }


async def test_lead_won_carries_the_lead_the_campaign_and_the_value(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = FixedClock(datetime.now(UTC))
    ep = await _subscribed(ws, create_hook, receiver, clock)
    lead = await add_lead(ws, "ada@won.example", first_name="Ada", last_name="Lovelace", company="Engines")
    cid = (await hook_http.post("/api/v1/campaigns", headers=ws.headers, json={"name": "Q3"})).json()["id"]
    body = {"value": 99, "campaignId": cid}
    assert (
        await hook_http.post(f"/api/v1/leads/{lead}/won", headers=ws.headers, json=body)
    ).status_code == 200
    await run_worker(make_runtime(clock))
    [event] = _bodies(receiver, ep, "lead.won")
    assert event["workspaceId"] == ws.workspace_id
    assert event["data"] == {
        "lead": _lead(
            lead, "ada@won.example", "won", firstName="Ada", lastName="Lovelace", company="Engines"
        ),
        "campaign": {"id": cid, "name": "Q3"},
        "thread": None,
        "step": None,
        "variant": None,
        "value": 99,
    }


async def test_lead_labeled_by_a_person_and_by_a_timed_trigger(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = FixedClock(datetime.now(UTC))
    ep = await _subscribed(ws, create_hook, receiver, clock)
    a, b = await add_lead(ws, "a@label.example"), await add_lead(ws, "b@label.example", first_name="Bo")
    later = (await hook_http.post("/api/v1/labels", headers=ws.headers, json={"name": "Follow up"})).json()[
        "id"
    ]
    body = {"name": "Hot lead", "triggers": {"applyLabel": {"labelId": later, "afterDays": 2}}}
    label = (await hook_http.post("/api/v1/labels", headers=ws.headers, json=body)).json()["id"]
    added = await hook_http.post(
        "/api/v1/leads/labels/add", headers=ws.headers, json={"target": {"ids": [a, b]}, "labelId": label}
    )
    assert added.json() == {"labeled": 2}
    rt = make_runtime(clock)
    await run_worker(rt)
    manual = {e["data"]["lead"]["id"]: e["data"] for e in _bodies(receiver, ep, "lead.labeled")}
    assert manual[b] == {
        "lead": _lead(b, "b@label.example", "active", firstName="Bo"),
        "campaign": None,
        "thread": None,
        "step": None,
        "variant": None,
        "label": {"id": label, "name": "Hot lead"},
        "source": "manual",
    }
    assert set(manual) == {a, b}

    clock.advance(days=2, minutes=1)
    assert await label_timers.tick(rt) == 2
    await run_worker(rt)
    triggered = [e["data"] for e in _bodies(receiver, ep, "lead.labeled") if e["data"]["source"] == "trigger"]
    assert sorted(e["lead"]["id"] for e in triggered) == sorted([a, b])
    assert {e["label"]["id"] for e in triggered} == {later}


async def test_lead_unsubscribed_by_the_one_click_link(
    hook_http: httpx.AsyncClient,
    hook_runtime: Any,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = FixedClock(datetime.now(UTC))
    ep = await _subscribed(ws, create_hook, receiver, clock)
    lead = await add_lead(ws, "reader@unsub.example", first_name="Rea")
    cid = (await hook_http.post("/api/v1/campaigns", headers=ws.headers, json={"name": "Newsletter"})).json()[
        "id"
    ]
    link = unsubscribe_url(hook_runtime.settings, workspace_id=ws.workspace_id, lead_id=lead, campaign_id=cid)
    path = urlsplit(link).path
    assert (await hook_http.get(path)).status_code == 200  # the page: a GET changes nothing
    one_click = {"Content-Type": "application/x-www-form-urlencoded"}
    done = await hook_http.post(path, content=b"List-Unsubscribe=One-Click", headers=one_click)
    assert done.status_code == 200
    assert (await hook_http.post(path)).status_code == 200  # again: no second event
    await run_worker(make_runtime(clock))
    [event] = _bodies(receiver, ep, "lead.unsubscribed")
    assert event["data"] == {
        "lead": _lead(lead, "reader@unsub.example", "unsubscribed", firstName="Rea"),
        "campaign": {"id": cid, "name": "Newsletter"},
        "thread": None,
        "step": None,
        "variant": None,
        "source": "link",
    }


async def test_campaign_paused_by_a_person_and_after_its_end_on_date(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = FixedClock(datetime.now(UTC))
    ep = await _subscribed(ws, create_hook, receiver, clock)
    by_hand, ended = await ready_campaign(hook_http, ws), await ready_campaign(hook_http, ws)
    for cid in (by_hand, ended):
        await ok(hook_http, ws, "POST", f"/campaigns/{cid}/launch")
    await ok(hook_http, ws, "POST", f"/campaigns/{by_hand}/pause")
    two_days_ago = (datetime.now(UTC) - timedelta(days=2)).date().isoformat()

    async def end(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            scoped(ctx, campaigns).update().where(campaigns.c.id == ended).values(end_on=two_days_ago)
        )

    await ws.runtime.execute(await ws.principal(), end)
    await campaigns_worker.tick(ws.runtime)
    await run_worker(make_runtime(clock))
    names = {c["id"]: c["name"] for c in (await ok(hook_http, ws, "GET", "/campaigns"))["campaigns"]}
    assert sorted(
        (e["data"]["campaign"]["id"], e["data"]["cause"]) for e in _bodies(receiver, ep, "campaign.paused")
    ) == sorted([(by_hand, "person"), (ended, "end_on")])
    for event in _bodies(receiver, ep, "campaign.paused"):
        cid = event["data"]["campaign"]["id"]
        assert event["data"]["campaign"] == {"id": cid, "name": names[cid]}
        expected = (
            "Paused by a person." if cid == by_hand else f"The last sending day ({two_days_ago}) has passed."
        )
        assert event["data"]["reason"] == expected and set(event["data"]) == {"campaign", "reason", "cause"}


REFUSALS: dict[str, str] = {}


@pytest.fixture
def refusing(smtp_servers: dict[str, SmtpServer]) -> Iterator[SmtpServer]:
    server = smtp_servers["starttls"]
    server.rcpt_reply = REFUSALS.get
    yield server
    server.rcpt_reply = None
    REFUSALS.clear()


async def test_lead_bounced_while_sending_and_the_bounce_threshold_pause(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
    refusing: SmtpServer,
    mail_users: Users,
) -> None:
    """20 leads, 2 refused by the receiving server (550 5.1.1): two `lead.bounced` with the email that
    bounced, and the campaign paused at its 10 % threshold."""
    ws = await make_workspace()
    clock = FixedClock(datetime.now(UTC))
    ep = await _subscribed(ws, create_hook, receiver, clock)
    boxes = [await smtp_mailbox(ws, refusing, mail_users) for _ in range(20)]
    lead_ids = []
    for i in range(20):
        address = f"p{i}@bounce-events.example"
        lead_ids.append(await add_lead(ws, address, first_name=f"P{i}"))
        if i < 2:
            REFUSALS[address] = "550 5.1.1 No such user here"
    cid = await launched_campaign(hook_http, ws, boxes, lead_ids, bounceThreshold=10)
    await sender.tick(ws.runtime)
    await run_worker(make_runtime(clock))

    bounced = sorted(_bodies(receiver, ep, "lead.bounced"), key=lambda e: str(e["data"]["lead"]["email"]))
    sends = {s.lead_id: s for s in await rows(ws, "sends", campaign_id=cid)}
    assert [e["data"]["lead"]["id"] for e in bounced] == lead_ids[:2]
    for i, event in enumerate(bounced):
        send = sends[lead_ids[i]]
        address = f"p{i}@bounce-events.example"
        assert event["data"] == {
            "lead": _lead(lead_ids[i], address, "bounced", firstName=f"P{i}"),
            "campaign": {"id": cid, "name": event["data"]["campaign"]["name"]},
            "thread": None,
            "step": {"id": send.step_id, "position": 0},
            "variant": {"id": send.variant_id, "label": "A"},
            "bounce": {
                "status": "5.1.1",
                "hard": True,
                "reason": send.error,
                "recipient": address,
                "source": "smtp",
            },
        }
        assert "5.1.1 No such user here" in send.error
    [paused] = _bodies(receiver, ep, "campaign.paused")
    assert paused["data"]["cause"] == "bounce_rate" and paused["data"]["campaign"]["id"] == cid
    assert paused["data"]["reason"].startswith("The bounce rate reached 10.0% (2 of 20 emails)")
