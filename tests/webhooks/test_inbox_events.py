"""The inbox's events end to end: messages ingested from a mailbox cause `lead.replied`, `lead.labeled`,
`lead.bounced` and `lead.unsubscribed`, which reach a subscribed endpoint signed, through the real
`webhooks` worker, with the payloads docs/webhooks.md documents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx

from outreach_core.kernel.ports import FixedClock
from tests.conftest import MakeWorkspace
from tests.inbox.ingest import builtin_id, dsn, fetched, ingest, reply_to, sent_campaign, threads_of
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import rows
from tests.webhooks.conftest import CreateHook, MakeRuntime, run_worker
from tests.webhooks.receiver import Receiver

KINDS = ["lead.replied", "lead.labeled", "lead.bounced", "lead.unsubscribed"]


def _bodies(receiver: Receiver, ep: Any, kind: str) -> list[dict[str, Any]]:
    got = [r for r in receiver.at(ep) if r.headers["service-event-type"] == kind]
    assert all(r.verified and r.json["type"] == kind and r.json["test"] is False for r in got)
    assert all(r.headers["service-event-id"] == r.json["id"] for r in got)
    return [r.json for r in got]


async def test_ingested_messages_reach_a_webhook_signed(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    clock = FixedClock(datetime.now(UTC))
    ep = receiver.endpoint(now=lambda: clock.now().timestamp())
    ep.secrets = [(await create_hook(ws, ep.url, KINDS))["secret"]]
    emails = ["rae@rae-corp.example", "sol@sol-corp.example", "tia@tia-corp.example"]
    sent = await sent_campaign(hook_http, ws, smtp_servers["starttls"], mail_users, emails)
    arrived = datetime.now(UTC)  # the answers arrive after the emails, on any day
    ledger = {s.lead_id: s for s in await rows(ws, "sends", campaign_id=sent.campaign_id)}
    reply = reply_to(sent.received[emails[0]], "Yes, let's talk on Thursday.")
    bounce = dsn(sent.received[emails[1]], "5.1.1", f"550 5.1.1 <{emails[1]}>: User unknown")
    stop = reply_to(sent.received[emails[2]], "Unsubscribe")
    assert (
        await ingest(sent, fetched(reply, at=arrived), fetched(bounce, at=arrived), fetched(stop, at=arrived))
        == 3
    )
    await run_worker(make_runtime(clock))

    thread = {t.lead_id: t for t in await threads_of(ws)}
    campaign = {"id": sent.campaign_id, "name": (await rows(ws, "campaigns", id=sent.campaign_id))[0].name}

    def context(email: str) -> dict[str, Any]:
        lead_id = sent.leads[email]
        send = ledger[lead_id]
        return {
            "campaign": campaign,
            "thread": {"id": thread[lead_id].id, "subject": thread[lead_id].subject},
            "step": {"id": send.step_id, "position": 0},
            "variant": {"id": send.variant_id, "label": "A"},
        }

    def lead(email: str, status: str) -> dict[str, Any]:
        return {"id": sent.leads[email], "email": email, "firstName": None, "lastName": None, "company": None,
                "status": status}  # fmt: skip

    [replied] = _bodies(receiver, ep, "lead.replied")
    message = replied["data"].pop("message")
    assert replied["data"] == {"lead": lead(emails[0], "replied"), **context(emails[0])}
    assert message["from"] == emails[0] and message["text"] == "Yes, let's talk on Thursday."
    received_at = f"{arrived:%Y-%m-%dT%H:%M:%S}.{arrived.microsecond // 1000:03d}Z"
    assert message["receivedAt"] == received_at and message["id"].startswith("msg_")
    [bounced] = _bodies(receiver, ep, "lead.bounced")
    assert bounced["data"] == {
        "lead": lead(emails[1], "bounced"),
        **context(emails[1]),
        "bounce": {"status": "5.1.1", "hard": True, "reason": f"550 5.1.1 <{emails[1]}>: User unknown",
                   "recipient": emails[1], "source": "inbox"},
    }  # fmt: skip
    [unsubscribed] = _bodies(receiver, ep, "lead.unsubscribed")
    assert unsubscribed["data"] == {
        "lead": lead(emails[2], "unsubscribed"),
        **context(emails[2]),
        "source": "reply",
    }
    labeled = {e["data"]["lead"]["email"]: e["data"] for e in _bodies(receiver, ep, "lead.labeled")}
    assert set(labeled) == {emails[1], emails[2]}  # replies are labelled by AI only: none configured here
    assert labeled[emails[1]] == {
        "lead": lead(emails[1], "bounced"),
        **context(emails[1]),
        "label": {"id": await builtin_id(ws, "bounce"), "name": "Bounce"},
        "source": "rules",
    }
    assert labeled[emails[2]]["label"]["name"] == "Unsubscribe request"


async def test_a_label_set_by_hand_does_what_the_classifiers_label_does(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    api = "/api/v1"
    ws = await make_workspace()
    clock = FixedClock(datetime.now(UTC))
    ep = receiver.endpoint(now=lambda: clock.now().timestamp())
    ep.secrets = [(await create_hook(ws, ep.url, ["lead.labeled"]))["secret"]]
    email = "uma@uma-corp.example"
    sent = await sent_campaign(hook_http, ws, smtp_servers["starttls"], mail_users, [email])
    [send] = await rows(ws, "sends", campaign_id=sent.campaign_id)
    assert (
        await ingest(sent, fetched(reply_to(sent.received[email], "Sounds good, send me the details."))) == 1
    )
    [thread] = await threads_of(ws)
    assert thread.label_id is None  # no AI configured: the reply is not labelled

    # the workspace's Interested label moves leads to a list (a trigger, as a user sets one)
    hot = (await hook_http.post(f"{api}/lists", headers=ws.headers, json={"name": "Hot"})).json()["id"]
    interested = await builtin_id(ws, "interested")
    moved = await hook_http.patch(
        f"{api}/labels/{interested}", headers=ws.headers, json={"triggers": {"moveToListId": hot}}
    )
    assert moved.status_code == 200, moved.text

    async def status_of_lead() -> str:
        return str(
            (await hook_http.get(f"{api}/leads/{sent.leads[email]}", headers=ws.headers)).json()["status"]
        )

    async def stats() -> dict[str, int]:
        return dict((await hook_http.get(f"{api}/leads/stats", headers=ws.headers)).json()["status"])

    assert await status_of_lead() == "replied"
    assert (await stats())["replied"] == 1 and (await stats())["interested"] == 0

    patched = await hook_http.patch(
        f"{api}/threads/{thread.id}", headers=ws.headers, json={"labelId": interested}
    )
    assert patched.status_code == 200 and patched.json()["labelSource"] == "manual"
    assert await status_of_lead() == "interested"
    assert (await stats())["interested"] == 1 and (await stats())["replied"] == 0
    listed = (await hook_http.get(f"{api}/leads", headers=ws.headers, params={"listId": hot})).json()
    assert [lead["id"] for lead in listed["leads"]] == [sent.leads[email]]

    await run_worker(make_runtime(clock))
    [labeled] = _bodies(receiver, ep, "lead.labeled")
    campaign = (await rows(ws, "campaigns", id=sent.campaign_id))[0].name
    assert labeled["data"] == {  # the classifier's event, with source manual
        "lead": {"id": sent.leads[email], "email": email, "firstName": None, "lastName": None,
                 "company": None, "status": "interested"},
        "campaign": {"id": sent.campaign_id, "name": campaign},
        "thread": {"id": thread.id, "subject": thread.subject},
        "step": {"id": send.step_id, "position": 0},
        "variant": {"id": send.variant_id, "label": "A"},
        "label": {"id": interested, "name": "Interested"},
        "source": "manual",
    }  # fmt: skip

    # the person changes their mind: Not interested takes the interest back, as the classifier's would
    no = await builtin_id(ws, "not_interested")
    assert (
        await hook_http.patch(f"{api}/threads/{thread.id}", headers=ws.headers, json={"labelId": no})
    ).status_code == 200
    assert await status_of_lead() == "replied"
    assert (await stats())["interested"] == 0 and (await stats())["replied"] == 1
