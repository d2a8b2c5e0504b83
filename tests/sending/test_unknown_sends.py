"""A hand-off lost in a crash becomes `unknown` and is never repeated by itself; `resolve_unknown_send` lets a
person settle it: delivered (the sequence goes on) or not delivered (the same email goes out once more)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from outreach_core.sending.planner import plan_batch
from outreach_core.sending.recovery import recover_lost_sends
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, received_by, rows, smtp_mailbox, update_rows
from workers import sender

API = "/api/v1"


async def _lost_first_email(
    http: httpx.AsyncClient, ws: WorkspaceHandle, server: SmtpServer, users: Users, address: str
) -> tuple[str, str, Any, Any]:
    """A launched campaign whose first email to `address` was claimed and then lost (the worker 'died'
    between the claim and the hand-off): the send is unknown and the campaign lead stopped."""
    box = await smtp_mailbox(ws, server, users)
    lead = await add_lead(ws, address, first_name="Grace")
    cid = await launched_campaign(http, ws, [box], [lead])
    batch = await ws.runtime.system(plan_batch)
    assert any(job.lead_email == address for job in batch.jobs)
    await ws.runtime.system(recover_lost_sends, everything=True)
    [send] = await rows(ws, "sends", campaign_id=cid)
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert (send.status, cl.status) == ("unknown", "stopped") and "outcome unknown" in cl.reason
    return cid, box, cl, send


@pytest.fixture
def starttls(smtp_servers: dict[str, SmtpServer]) -> SmtpServer:
    return smtp_servers["starttls"]


async def _resolve(
    http: httpx.AsyncClient, ws: WorkspaceHandle, cid: str, cl: Any, send_id: str, body: Any
) -> httpx.Response:
    path = f"{API}/campaigns/{cid}/leads/{cl.id}/sends/{send_id}/resolve"
    return await http.post(path, headers=ws.headers, json=body)


async def test_unknown_send_is_not_repeated_until_resolved_as_not_delivered(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    server = starttls
    cid, box, cl, send = await _lost_first_email(http, ws, server, mail_users, "grace@lost.example")
    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
    await sender.tick(ws.runtime)
    assert received_by(server, "grace@lost.example") == []  # never repeated by itself

    response = await _resolve(http, ws, cid, cl, send.id, {"delivered": False})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["send"]["status"] == "retry" and body["send"]["id"] == send.id
    assert body["lead"]["status"] == "not_contacted" and body["lead"]["step"] == 0
    assert body["lead"]["reason"] is None and body["lead"]["email"] == "grace@lost.example"

    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
    await sender.tick(ws.runtime)
    [message] = received_by(server, "grace@lost.example")
    [again] = await rows(ws, "sends", campaign_id=cid)
    assert (again.id, again.status, again.attempts) == (send.id, "sent", 2)  # the same ledger row
    assert message["Message-ID"] == again.message_id and message["Subject"] == "Hello Grace"
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert (cl.status, cl.step, cl.thread_message_id) == ("contacted", 1, again.message_id)

    # settled: resolving it again is refused and changes nothing
    response = await _resolve(http, ws, cid, cl, send.id, {"delivered": True})
    assert response.status_code == 409 and response.json()["error"]["code"] == "invalid_state"
    [still] = await rows(ws, "sends", campaign_id=cid)
    assert (still.status, still.attempts) == ("sent", 2)


async def test_unknown_send_resolved_as_delivered_continues_the_sequence_in_its_thread(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    server = starttls
    cid, box, cl, send = await _lost_first_email(http, ws, server, mail_users, "ada@found.example")

    response = await _resolve(http, ws, cid, cl, send.id, {"delivered": True})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["send"]["status"] == "sent" and body["lead"]["status"] == "contacted"
    [settled] = await rows(ws, "sends", campaign_id=cid)
    assert settled.sent_at == settled.created_at and settled.error is None
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert (cl.status, cl.step, cl.mailbox_id) == ("contacted", 1, box)
    assert cl.next_at == send.created_at + timedelta(days=2)  # the follow-up's waitDays from the hand-off
    assert cl.thread_message_id == send.message_id and cl.finished_at is None

    # when due, the follow-up threads under the email that was lost and found
    await update_rows(ws, "campaign_leads", {"next_at": send.created_at}, id=cl.id)
    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
    await sender.tick(ws.runtime)
    [follow_up] = received_by(server, "ada@found.example")
    assert follow_up["In-Reply-To"] == send.message_id and follow_up["Subject"] == "Re: Hello Grace"


async def test_resolving_refuses_what_it_cannot_settle(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    server = starttls
    cid, _, cl, send = await _lost_first_email(http, ws, server, mail_users, "lin@replied.example")

    missing = await _resolve(http, ws, cid, cl, "snd_missing", {"delivered": True})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    no_body = await _resolve(http, ws, cid, cl, send.id, {})
    assert no_body.status_code == 422

    # the lead replied meanwhile: sending again is refused; recording the email as delivered is allowed
    # and leaves the lead as it is
    await update_rows(ws, "campaign_leads", {"status": "replied", "reason": None}, id=cl.id)
    again = await _resolve(http, ws, cid, cl, send.id, {"delivered": False})
    assert again.status_code == 409 and again.json()["error"]["code"] == "invalid_state"
    [unchanged] = await rows(ws, "sends", campaign_id=cid)
    assert unchanged.status == "unknown"
    found = await _resolve(http, ws, cid, cl, send.id, {"delivered": True})
    assert found.status_code == 200 and found.json()["lead"]["status"] == "replied"
    assert found.json()["send"]["status"] == "sent"

    # another workspace cannot see or settle it
    other = await make_workspace()
    foreign = await _resolve(http, other, cid, cl, send.id, {"delivered": True})
    assert foreign.status_code == 404


async def test_a_completed_campaign_is_paused_when_its_lead_waits_again(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    server = starttls
    cid, _, cl, send = await _lost_first_email(http, ws, server, mail_users, "kay@completed.example")
    await update_rows(ws, "campaigns", {"status": "completed"}, id=cid)

    response = await _resolve(http, ws, cid, cl, send.id, {"delivered": False})
    assert response.status_code == 200, response.text
    campaign = (await http.get(f"{API}/campaigns/{cid}", headers=ws.headers)).json()
    assert campaign["status"] == "paused" and "again" in campaign["pausedReason"]
