"""Threads through REST as a client sees them: listing and its filters, a conversation in time order (the
campaign's real emails from the ledger and the messages received), manual labels, unread, roles, errors."""

from __future__ import annotations

from typing import Any

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import outbox
from tests.campaigns.helpers import add_lead
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.inbox.thread_seed import T0, minutes, seed_message, seed_thread
from tests.lists.helpers import carriers, new_label, suppressed_values
from tests.mail_servers import SmtpServer, Users
from tests.mailboxes.helpers import seed_mailbox
from tests.sending.helpers import launched_campaign, rows, smtp_mailbox
from workers import sender

API = "/api/v1"


async def listing(http: httpx.AsyncClient, ws: WorkspaceHandle, **params: Any) -> dict[str, Any]:
    response = await http.get(f"{API}/threads", headers=ws.headers, params=params)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def ids(page: dict[str, Any]) -> list[str]:
    return [t["id"] for t in page["threads"]]


async def test_listing_filters_and_orders_newest_first(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    box_a = await seed_mailbox(ws, "a@mail.test")
    box_b = await seed_mailbox(ws, "b@mail.test")
    ada = await add_lead(ws, "ada.threads@lovelace.example", first_name="Ada", last_name="Lovelace")
    bob = await add_lead(ws, "bob@builder.example", first_name="Bob")
    cid = (await http.post(f"{API}/campaigns", headers=ws.headers, json={"name": "Q3"})).json()["id"]
    label = await new_label(http, ws, "Hot lead", type="positive")

    t1 = await seed_thread(ws, ada, box_a, campaign_id=cid, subject="Pricing", at=T0, messages=1)
    t2 = await seed_thread(
        ws, bob, box_b, subject="Away", kind="out_of_office", at=T0 + minutes(5), unread=False
    )
    t3 = await seed_thread(
        ws,
        bob,
        box_a,
        campaign_id=cid,
        subject="Undeliverable",
        kind="bounce",
        at=T0 + minutes(10),
        label_id=label,
        label_source="rules",
        label_reason="RFC 3464 report",
    )

    page = await listing(http, ws)
    assert ids(page) == [t3, t2, t1] and page["total"] == 3
    assert (page["page"], page["pageSize"]) == (1, 50)
    first = page["threads"][0]
    assert first == {
        "id": t3,
        "leadId": bob,
        "lead": {"email": "bob@builder.example", "name": "Bob"},
        "campaignId": cid,
        "mailboxId": box_a,
        "subject": "Undeliverable",
        "kind": "bounce",
        "label": {"id": label, "name": "Hot lead", "type": "positive"},
        "labelSource": "rules",
        "labelReason": "RFC 3464 report",
        "lastMessageAt": "2026-03-02T09:10:00.000Z",
        "unread": True,
        "messageCount": 0,
    }
    assert page["threads"][2]["lead"] == {"email": "ada.threads@lovelace.example", "name": "Ada Lovelace"}
    assert page["threads"][2]["label"] is None

    assert ids(await listing(http, ws, labelId=label)) == [t3]
    assert ids(await listing(http, ws, labelId="none")) == [t2, t1]
    assert ids(await listing(http, ws, campaignId=cid)) == [t3, t1]
    assert ids(await listing(http, ws, mailboxId=box_b)) == [t2]
    assert ids(await listing(http, ws, leadId=bob)) == [t3, t2]
    assert ids(await listing(http, ws, kind=["bounce", "out_of_office"])) == [t3, t2]
    assert ids(await listing(http, ws, kind="reply")) == [t1]
    assert ids(await listing(http, ws, unread="true")) == [t3, t1]
    assert ids(await listing(http, ws, unread="false")) == [t2]
    assert ids(await listing(http, ws, search="LOVELACE")) == [t1]
    assert ids(await listing(http, ws, search="pric")) == [t1]
    assert ids(await listing(http, ws, search="100%")) == []
    both = await listing(http, ws, leadId=bob, unread="true", kind="bounce")
    assert ids(both) == [t3] and both["total"] == 1

    paged = await listing(http, ws, pageSize=10, page=2)
    assert paged["threads"] == [] and paged["total"] == 3


async def test_listing_refuses_bad_paging_and_kinds(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    for params in ({"pageSize": 5}, {"pageSize": 201}, {"page": 0}, {"kind": "spam"}, {"unread": "maybe"}):
        response = await http.get(f"{API}/threads", headers=ws.headers, params=params)
        assert response.status_code == 422, params
        assert response.json()["error"]["code"] == "invalid_input"
    response = await http.get(f"{API}/threads", headers=ws.headers, params={"sort": "x"})
    assert response.status_code == 422


async def test_a_conversation_holds_the_campaigns_real_emails_and_the_replies_in_time_order(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, smtp_servers["starttls"], mail_users)
    lead = await add_lead(ws, "grace.threads@hopper.example", first_name="Grace")
    cid = await launched_campaign(http, ws, [box], [lead])
    assert await sender.tick(ws.runtime) >= 1
    [send] = await rows(ws, "sends", campaign_id=cid)
    mailbox_row = (await rows(ws, "mailboxes", id=box))[0]

    thread = await seed_thread(ws, lead, box, campaign_id=cid, subject=send.subject, at=send.sent_at)
    later = send.sent_at + minutes(30)
    reply = await seed_message(
        ws,
        thread,
        box,
        at=later,
        from_email="grace.threads@hopper.example",
        send_id=send.id,
        text="Yes please.",
    )
    bounce_at = send.sent_at + minutes(1)
    bounced = await seed_message(
        ws,
        thread,
        box,
        at=bounce_at,
        from_email="mailer-daemon@hopper.example",
        kind="bounce",
        subject="Undelivered Mail Returned to Sender",
        bounce={
            "status": "4.2.2",
            "hard": False,
            "reason": "mailbox full",
            "recipient": "grace.threads@hopper.example",
        },
    )

    response = await http.get(f"{API}/threads/{thread}", headers=ws.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == thread and body["messageCount"] == 2 and body["unread"] is True
    assert [(m["id"], m["direction"], m["kind"]) for m in body["messages"]] == [
        (send.id, "out", "campaign"),
        (bounced, "in", "bounce"),
        (reply, "in", "reply"),
    ]
    out, dsn, answer = body["messages"]
    assert out["from"] == mailbox_row.email and out["to"] == ["grace.threads@hopper.example"]
    assert out["subject"] == "Hello Grace" and "A short note about" in out["text"]
    assert out["html"] == send.body_html and out["sendId"] == send.id and out["bounce"] is None
    assert dsn["bounce"] == {
        "status": "4.2.2",
        "hard": False,
        "reason": "mailbox full",
        "recipient": "grace.threads@hopper.example",
    }
    assert answer["sendId"] == send.id and answer["text"] == "Yes please." and answer["bounce"] is None
    assert answer["from"] == "grace.threads@hopper.example" and answer["html"] is None

    # opening does not mark it read
    assert (await listing(http, ws))["threads"][0]["unread"] is True

    missing = await http.get(f"{API}/threads/thr_missing", headers=ws.headers)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def _labeled_events(ws: WorkspaceHandle) -> list[dict[str, Any]]:
    async def read(ctx: WorkspaceContext) -> list[dict[str, Any]]:
        stmt = scoped(ctx, outbox).select().where(outbox.c.kind == "lead.labeled").order_by(outbox.c.seq)
        return [dict(r._mapping) for r in (await ctx.conn.execute(stmt)).all()]

    return await ws.runtime.read(await ws.principal(), read)


async def test_a_manual_label_goes_on_the_lead_runs_its_triggers_and_says_who(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    member = await ws.add_member("member")
    box = await seed_mailbox(ws, "box@mail.test")
    lead = await add_lead(ws, "linus@kernel.example")
    ai_label = await new_label(http, ws, "Hot lead", type="positive")
    no = await new_label(http, ws, "Nope", type="negative", triggers={"suppress": True})
    thread = await seed_thread(
        ws, lead, box, label_id=ai_label, label_source="ai", label_reason="asks for a call"
    )

    response = await http.patch(f"{API}/threads/{thread}", headers=member.headers, json={"labelId": no})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["label"] == {"id": no, "name": "Nope", "type": "negative"}
    assert body["labelSource"] == "manual"
    assert body["labelReason"].startswith("set by Member ")
    assert body["labelReason"].endswith(f"<{member.email}>")
    assert lead in await carriers(ws, no)
    assert "linus@kernel.example" in await suppressed_values(ws)  # the label's trigger ran
    [event] = await _labeled_events(ws)
    data = event["payload"]["data"]
    assert data["lead"]["id"] == lead and data["source"] == "manual"
    assert data["label"] == {"id": no, "name": "Nope"}
    assert data["thread"] == {"id": thread, "subject": "Hello"}

    # the same label again changes nothing on the lead (no second event)
    again = await http.patch(f"{API}/threads/{thread}", headers=ws.headers, json={"labelId": no})
    assert again.status_code == 200 and len(await _labeled_events(ws)) == 1

    cleared = (await http.patch(f"{API}/threads/{thread}", headers=ws.headers, json={"labelId": None})).json()
    assert cleared["label"] is None and cleared["labelSource"] == "manual"
    assert cleared["labelReason"].startswith("cleared by ") and ws.email in cleared["labelReason"]
    assert lead in await carriers(ws, no)  # the lead keeps it; unlabel_leads takes it off

    read = (await http.patch(f"{API}/threads/{thread}", headers=ws.headers, json={"unread": False})).json()
    assert read["unread"] is False and read["labelSource"] == "manual"
    unread_only = await http.patch(f"{API}/threads/{thread}", headers=ws.headers, json={"unread": True})
    assert unread_only.json()["unread"] is True and unread_only.json()["labelReason"] == read["labelReason"]


async def test_update_errors(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws, other = await make_workspace(), await make_workspace()
    box = await seed_mailbox(ws, "box@mail.test")
    lead = await add_lead(ws, "x@y.example")
    thread = await seed_thread(ws, lead, box)
    their_label = await new_label(http, other, "Theirs")

    for body, status in (
        ({"labelId": "lbl_missing"}, 404),
        ({"labelId": their_label}, 404),
        ({"unread": "yes"}, 422),
        ({"labelId": 5}, 422),
        ({"color": "red"}, 422),
    ):
        response = await http.patch(f"{API}/threads/{thread}", headers=ws.headers, json=body)
        assert response.status_code == status, (body, response.text)
    response = await http.patch(f"{API}/threads/thr_missing", headers=ws.headers, json={"unread": False})
    assert response.status_code == 404
    unchanged = (await listing(http, ws))["threads"][0]
    assert unchanged["label"] is None and unchanged["labelSource"] is None and unchanged["unread"] is True
