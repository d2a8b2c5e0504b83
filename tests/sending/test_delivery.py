"""End to end, in real time: a launched campaign's emails arrive at aiosmtpd with the right headers."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import MakeWorkspace
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, received_by, rows, smtp_mailbox, update_rows
from workers import sender


async def test_first_email_arrives_with_headers_and_both_parts(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["starttls"]
    box = await smtp_mailbox(ws, server, mail_users)
    lead = await add_lead(ws, "ada@lovelace.example", first_name="Ada", company="Analytical")
    cid = await launched_campaign(http, ws, [box], [lead])

    assert await sender.tick(ws.runtime) >= 1

    [message] = received_by(server, "ada@lovelace.example")
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert send.status == "sent" and send.sent_at is not None and send.step == 0
    assert message["Message-ID"] == send.message_id and send.message_id.endswith("@mail.test>")
    assert message["Subject"] == "Hello Ada" == send.subject
    assert message["From"].addresses[0].display_name == "Sam Sender"
    assert message["To"] == "ada@lovelace.example"
    assert message["Date"] is not None
    assert message.get_content_type() == "multipart/alternative"
    unsubscribe = message["List-Unsubscribe"]
    assert unsubscribe.startswith("<http://127.0.0.1:") and "/u/" in unsubscribe
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None and html is not None
    assert "A short note about Analytical." in text.get_content()
    assert "Sender Co" in text.get_content() and "Sender Co" in html.get_content()
    assert unsubscribe[1:-1] in html.get_content()
    assert "A short note about Analytical." in send.body_text and "Analytical" in send.body_html

    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert (cl.status, cl.step, cl.mailbox_id) == ("contacted", 1, box)
    assert cl.thread_message_id == send.message_id and cl.next_at is not None
    [mb] = await rows(ws, "mailboxes", id=box)
    assert mb.sent_count == 1 and mb.last_sent_at is not None and mb.next_send_at > mb.last_sent_at

    # the same pass again: the mailbox waits out its gap, and the lead its waitDays
    assert await sender.tick(ws.runtime) == 0
    assert len(received_by(server, "ada@lovelace.example")) == 1

    # the follow-up, once due, threads under the first email from the same mailbox
    await update_rows(ws, "campaign_leads", {"next_at": cl.last_sent_at}, id=cl.id)
    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
    assert await sender.tick(ws.runtime) >= 1
    first, second = received_by(server, "ada@lovelace.example")
    assert second["In-Reply-To"] == first["Message-ID"] == second["References"]
    assert second["Subject"] == "Re: Hello Ada"
    assert "Just bumping this up." in second.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert (cl.status, cl.step, cl.finished_at is not None) == ("completed", 2, True)

    listed = (await http.get(f"/api/v1/campaigns/{cid}/leads/{cl.id}/sends", headers=ws.headers)).json()[
        "sends"
    ]
    assert [(s["step"], s["status"]) for s in listed] == [(0, "sent"), (1, "sent")]


async def test_implicit_tls_mailbox_sends(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["tls"]
    box = await smtp_mailbox(ws, server, mail_users)
    lead = await add_lead(ws, "tls-reader@example.org")
    await launched_campaign(http, ws, [box], [lead])
    await sender.tick(ws.runtime)
    [message] = received_by(server, "tls-reader@example.org")
    assert message["Subject"] == "Hello there"
    data: Any = message
    assert data["From"].addresses[0].addr_spec.endswith("@mail.test")


async def test_follow_up_of_a_deleted_mailbox_continues_from_another(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["tls"]
    gone = await smtp_mailbox(ws, server, mail_users)
    lead = await add_lead(ws, "orphan@follow.example")
    cid = await launched_campaign(http, ws, [gone], [lead])
    await sender.tick(ws.runtime)
    other = await smtp_mailbox(ws, server, mail_users)
    await http.patch(f"/api/v1/campaigns/{cid}", headers=ws.headers, json={"mailboxIds": [gone, other]})
    assert (await http.delete(f"/api/v1/mailboxes/{gone}", headers=ws.headers)).status_code == 200
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert cl.mailbox_id is None
    await update_rows(ws, "campaign_leads", {"next_at": cl.last_sent_at}, id=cl.id)
    await sender.tick(ws.runtime)
    first, second = received_by(server, "orphan@follow.example")
    assert second["In-Reply-To"] == first["Message-ID"]
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert (cl.status, cl.mailbox_id) == ("completed", other)
