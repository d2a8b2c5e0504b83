"""Every SMTP outcome class against aiosmtpd: temporary failure, unknown recipient, refused login; the
bounce threshold; a mailbox in error hands its lead to a working one."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import MakeWorkspace
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, received_by, rows, smtp_mailbox, update_rows
from workers import sender

REFUSALS: dict[str, str] = {}


@pytest.fixture
def starttls(smtp_servers: dict[str, SmtpServer]) -> Iterator[SmtpServer]:
    """The STARTTLS server, refusing the recipients listed in REFUSALS with the given reply."""
    server = smtp_servers["starttls"]
    server.rcpt_reply = REFUSALS.get
    yield server
    server.rcpt_reply = None
    REFUSALS.clear()


async def test_temporary_failure_is_retried_later_and_not_counted(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, starttls, mail_users)
    lead = await add_lead(ws, "greylisted@later.example")
    REFUSALS["greylisted@later.example"] = "451 4.7.1 Greylisted, try again later"
    REFUSALS["busy@later.example"] = "452 4.2.2 Mailbox busy"
    REFUSALS.pop("greylisted@later.example")
    lead = await add_lead(ws, "busy@later.example")
    cid = await launched_campaign(http, ws, [box], [lead])

    await sender.tick(ws.runtime)
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert (send.status, send.attempts) == ("retry", 1) and send.error.startswith("452")
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert cl.status == "rescheduled" and cl.step == 0 and cl.next_at > cl.added_at
    assert "temporary failure" in cl.reason
    [mb] = await rows(ws, "mailboxes", id=box)
    assert mb.status == "active" and mb.sent_count == 0

    # once due again (and the server takes it), the same ledger row is sent: one row per step
    REFUSALS.clear()
    await update_rows(ws, "campaign_leads", {"next_at": cl.added_at}, id=cl.id)
    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
    await sender.tick(ws.runtime)
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert (send.status, send.attempts) == ("sent", 2)
    assert len(received_by(starttls, "busy@later.example")) == 1
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert (cl.status, cl.step) == ("contacted", 1)


async def test_unknown_recipient_bounces_the_lead_with_an_event(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, starttls, mail_users)
    lead = await add_lead(ws, "nobody@bounce.example")
    REFUSALS["nobody@bounce.example"] = "550 5.1.1 No such user here"
    cid = await launched_campaign(http, ws, [box], [lead])

    await sender.tick(ws.runtime)
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert send.status == "bounced" and "5.1.1" in send.error
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert cl.status == "bounced" and cl.finished_at is not None
    [person] = await rows(ws, "leads", id=lead)
    assert person.status == "bounced"
    events = await _events(ws)
    [bounce] = [e.payload["data"] for e in events if e.kind == "lead.bounced"]
    assert bounce["lead"]["id"] == lead and bounce["lead"]["status"] == "bounced"
    assert bounce["campaign"]["id"] == cid and bounce["step"] == {"id": send.step_id, "position": 0}
    assert bounce["variant"] == {"id": send.variant_id, "label": "A"}
    assert bounce["bounce"] == {
        "status": "5.1.1",
        "hard": True,
        "reason": send.error,
        "recipient": "nobody@bounce.example",
        "source": "smtp",
    }
    [mb] = await rows(ws, "mailboxes", id=box)
    assert mb.status == "active"


async def test_refused_login_puts_the_mailbox_in_error_and_another_mailbox_takes_the_lead(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    secret = "marker-Pa55word-never-shown"
    broken = await smtp_mailbox(ws, starttls, mail_users, password=secret, register=False)
    lead = await add_lead(ws, "patient@wait.example")
    cid = await launched_campaign(http, ws, [broken], [lead])

    await sender.tick(ws.runtime)
    [mb] = await rows(ws, "mailboxes", id=broken)
    assert mb.status == "error" and "535" in mb.status_reason and secret not in mb.status_reason
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert cl.status == "rescheduled" and cl.mailbox_id is None and "mailbox could not send" in cl.reason
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert send.status == "retry" and secret not in (send.error or "")
    person = (await rows(ws, "leads", id=lead))[0]
    assert person.status == "active"
    assert received_by(starttls, "patient@wait.example") == []

    working = await smtp_mailbox(ws, starttls, mail_users)
    await http.patch(f"/api/v1/campaigns/{cid}", headers=ws.headers, json={"mailboxIds": [broken, working]})
    await sender.tick(ws.runtime)
    [message] = received_by(starttls, "patient@wait.example")
    assert message["From"].addresses[0].addr_spec == (await rows(ws, "mailboxes", id=working))[0].email
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert send.status == "sent" and send.mailbox_id == working


async def test_bounce_threshold_pauses_the_campaign(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, starttls: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    boxes = [await smtp_mailbox(ws, starttls, mail_users) for _ in range(20)]
    lead_ids = []
    for i in range(20):
        address = f"p{i}@threshold.example"
        lead_ids.append(await add_lead(ws, address))
        if i < 2:
            REFUSALS[address] = "550 5.1.1 unknown"
    cid = await launched_campaign(http, ws, boxes, lead_ids, bounceThreshold=10)
    await sender.tick(ws.runtime)
    statuses = sorted(s.status for s in await rows(ws, "sends", campaign_id=cid))
    assert statuses.count("bounced") == 2 and statuses.count("sent") == 18
    [campaign] = await rows(ws, "campaigns", id=cid)
    assert campaign.status == "paused" and "bounce rate reached 10.0%" in campaign.paused_reason
    assert any(e.kind == "campaign.paused" for e in await _events(ws))


async def _events(ws: object) -> list:  # type: ignore[type-arg]
    from outreach_core.kernel.context import WorkspaceContext, scoped
    from outreach_core.kernel.db.tables import outbox

    async def read(ctx: WorkspaceContext) -> list:  # type: ignore[type-arg]
        return list((await ctx.conn.execute(scoped(ctx, outbox).select().order_by(outbox.c.seq))).all())

    return await ws.runtime.read(await ws.principal(), read)  # type: ignore[attr-defined]
