"""One recipient's problem stays that recipient's (issue 19, items 1 and 3): a non-ASCII address goes out with
SMTPUTF8 or fails alone, a refusal after MAIL FROM fails one lead, and an email that cannot be built is a
recorded failure: the mailbox's when its own settings break every email, the lead's otherwise. Never a
campaign that completes silently with nothing sent."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import MakeWorkspace
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, received_by, rows, smtp_mailbox, update_rows
from tests.sending.test_headers_on_the_wire import raw_headers, raw_messages
from workers import campaigns as campaigns_worker
from workers import sender

ONE_STEP = [{"variants": [{"subject": "Hello {{first_name|there}}", "body": "Hi. {{unsubscribe}}"}]}]


@pytest.fixture
def starttls(smtp_servers: dict[str, SmtpServer]) -> Iterator[SmtpServer]:
    server = smtp_servers["starttls"]
    yield server
    server.rcpt_reply = None
    server.data_reply = None


async def sends_listed(http: httpx.AsyncClient, headers: dict[str, str], cid: str, clid: str) -> list[dict]:  # type: ignore[type-arg]
    response = await http.get(f"/api/v1/campaigns/{cid}/leads/{clid}/sends", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["sends"]  # type: ignore[no-any-return]


async def test_a_non_ascii_address_goes_out_with_smtputf8(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtputf8_server: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, smtputf8_server, mail_users, display_name="Zoë Sender")
    lead = await add_lead(ws, "josé@example.com", first_name="José")
    cid = await launched_campaign(http, ws, [box], [lead], steps=ONE_STEP)

    await sender.tick(ws.runtime)
    [received] = raw_messages(smtputf8_server, "josé@example.com")
    assert "SMTPUTF8" in [option.upper() for option in received.mail_options]
    headers = raw_headers(received.data)
    assert headers["to"][0][0] == "josé@example.com"  # UTF-8 as written (RFC 6532), not an encoded word
    assert headers["subject"][0][0] == "Hello José"
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert send.status == "sent"
    [mb] = await rows(ws, "mailboxes", id=box)
    assert mb.status == "active"


async def test_without_smtputf8_only_that_lead_fails_and_the_mailbox_keeps_sending(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, starttls, mail_users)
    jose = await add_lead(ws, "josé@example.net")
    ann = await add_lead(ws, "ann@example.net")
    cid = await launched_campaign(http, ws, [box], [jose, ann], steps=ONE_STEP)

    for _ in range(3):  # one email per mailbox and pass; a lead that failed is not tried again
        await sender.tick(ws.runtime)
        await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)

    [mb] = await rows(ws, "mailboxes", id=box)
    assert (mb.status, mb.status_reason) == ("active", None)
    assert len(received_by(starttls, "ann@example.net")) == 1
    assert received_by(starttls, "josé@example.net") == []
    by_lead = {r.lead_id: r for r in await rows(ws, "campaign_leads", campaign_id=cid)}
    failed = by_lead[jose]
    assert failed.status == "skipped" and "SMTPUTF8" in failed.reason and "josé@example.net" in failed.reason
    assert by_lead[ann].status == "completed"
    [listed] = await sends_listed(http, ws.headers, cid, failed.id)
    assert listed["status"] == "failed" and listed["attempts"] == 1 and "SMTPUTF8" in listed["error"]


async def test_a_refusal_after_data_fails_the_lead_not_the_mailbox(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, starttls, mail_users)
    lead = await add_lead(ws, "filtered@content.example")
    starttls.data_reply = lambda rcpts: (
        "554 5.7.1 Message rejected as spam" if "filtered@content.example" in rcpts else None
    )
    cid = await launched_campaign(http, ws, [box], [lead], steps=ONE_STEP)

    await sender.tick(ws.runtime)
    [mb] = await rows(ws, "mailboxes", id=box)
    assert mb.status == "active"
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert cl.status == "stopped" and "554 5.7.1" in cl.reason
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert send.status == "failed"


async def test_a_display_name_that_breaks_every_email_is_the_mailboxs_problem(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    """A display name with CR/LF stored before input validation refused it: the mailbox goes to `error`
    saying which field, the lead waits for a working mailbox, and the campaign does not complete."""
    ws = await make_workspace()
    broken = await smtp_mailbox(ws, starttls, mail_users, display_name="Good\r\nBcc: x@evil.test")
    lead = await add_lead(ws, "kept@waiting.example")
    cid = await launched_campaign(http, ws, [broken], [lead], steps=ONE_STEP)

    await sender.tick(ws.runtime)
    await campaigns_worker.tick(ws.runtime)
    assert received_by(starttls, "kept@waiting.example") == []
    with starttls.lock:
        assert not any(b"x@evil.test" in m.data or "x@evil.test" in m.rcpt_tos for m in starttls.messages)
    mailbox = (await http.get(f"/api/v1/mailboxes/{broken}", headers=ws.headers)).json()
    assert mailbox["status"] == "error" and "displayName" in mailbox["statusReason"]
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert cl.status == "rescheduled" and "displayName" in cl.reason
    [listed] = await sends_listed(http, ws.headers, cid, cl.id)
    assert listed["status"] == "retry" and "displayName" in listed["error"]
    campaign = (await http.get(f"/api/v1/campaigns/{cid}", headers=ws.headers)).json()
    assert campaign["status"] == "running"

    # a working mailbox takes the lead; the same ledger row is sent
    working = await smtp_mailbox(ws, starttls, mail_users)
    await http.patch(f"/api/v1/campaigns/{cid}", headers=ws.headers, json={"mailboxIds": [broken, working]})
    await sender.tick(ws.runtime)
    [message] = received_by(starttls, "kept@waiting.example")
    assert message["From"].addresses[0].display_name == "Sam Sender"
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert send.status == "sent" and send.mailbox_id == working


async def test_a_lead_whose_own_address_breaks_the_email_fails_alone(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    """A lead row stored before validation, whose address holds a line break: that lead's email is a
    recorded failure; the mailbox and the other leads go on."""
    ws = await make_workspace()
    box = await smtp_mailbox(ws, starttls, mail_users)
    bad = await add_lead(ws, "bad@row.example")
    await update_rows(ws, "leads", {"email": "bad@row.example\r\nBcc: x@evil.test"}, id=bad)
    good = await add_lead(ws, "good@row.example")
    cid = await launched_campaign(http, ws, [box], [bad, good], steps=ONE_STEP)

    for _ in range(3):
        await sender.tick(ws.runtime)
        await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)

    [mb] = await rows(ws, "mailboxes", id=box)
    assert mb.status == "active"
    assert len(received_by(starttls, "good@row.example")) == 1
    with starttls.lock:
        assert not any("x@evil.test" in m.rcpt_tos or b"x@evil.test" in m.data for m in starttls.messages)
    by_lead = {r.lead_id: r for r in await rows(ws, "campaign_leads", campaign_id=cid)}
    assert by_lead[good].status == "completed"
    failed = by_lead[bad]
    assert failed.status == "skipped" and "the lead's address" in failed.reason
    [listed] = await sends_listed(http, ws.headers, cid, failed.id)
    assert listed["status"] == "failed" and "the lead's address" in listed["error"]
