"""`reply_to_thread` end to end: the email as the lead's server receives it (aiosmtpd, raw bytes), its copy in
the mailbox's Sent folder (Dovecot), what the thread records, and the failures a person must see."""

from __future__ import annotations

import email
import email.policy
import tempfile
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest

import tests.mail_servers as mail_servers_module
from tests.campaigns.helpers import add_lead
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.inbox.imap_box import create_folder, folder_messages
from tests.inbox.ingest import Sent, dsn, fetched, ingest, reply_to, threads_of
from tests.mail_servers import Dovecot, MailServers
from tests.sending.helpers import launched_campaign, rows, smtp_mailbox, update_rows
from workers import sender

API = "/api/v1"


def replies(servers: MailServers, address: str) -> list[bytes]:
    """What the lead's server received after the campaign's first email, raw."""
    server = servers.smtp["starttls"]
    with server.lock:
        received = [m.data for m in server.messages if address in m.rcpt_tos]
    assert b"In-Reply-To" not in received[0]  # the campaign's email
    return received[1:]


def header_block(raw: bytes) -> dict[str, str]:
    """Headers as they are on the wire (unfolded), by lower-case name."""
    head = raw.split(b"\r\n\r\n", 1)[0].decode("ascii")
    unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ")
    found: dict[str, str] = {}
    for line in unfolded.split("\r\n"):
        name, _, value = line.partition(":")
        found[name.lower()] = value.strip()
    return found


async def conversation(
    http: httpx.AsyncClient, ws: WorkspaceHandle, servers: MailServers, *, sent_folder: str | None = "Sent"
) -> dict[str, Any]:
    """A mailbox on the test SMTP server and Dovecot, a lead that got the campaign's first email from the
    real sender, and a thread holding the lead's answer to it."""
    user, password = servers.add_user()
    dovecot = servers.imap
    box = await smtp_mailbox(
        ws,
        servers.smtp["starttls"],
        servers.users,
        password=password,
        email=user,
        smtp_user=user,
        imap_user=user,
        imap_host=dovecot.host,
        imap_port=dovecot.tls_port,
        imap_security="tls",
    )
    if sent_folder is not None:
        answer = await create_folder(dovecot, servers.ca, user, password, sent_folder)
        assert answer.startswith("OK"), answer
    lead_email = f"grace-{box[-6:].lower()}@hopper.example"
    lead = await add_lead(ws, lead_email, first_name="Grace")
    cid = await launched_campaign(http, ws, [box], [lead])
    assert await sender.tick(ws.runtime) >= 1
    [send] = await rows(ws, "sends", campaign_id=cid)
    # the lead answers; the inbox pipeline records it as a thread (real ingestion of a folder batch)
    server = servers.smtp["starttls"]
    with server.lock:
        [first] = [m.data for m in server.messages if lead_email in m.rcpt_tos]
    original = email.message_from_bytes(first, policy=email.policy.default)
    assert isinstance(original, EmailMessage)
    answer_raw = reply_to(original, "Interesting. Can we talk?")
    sent = Sent(ws, box, user, cid, {lead_email: lead}, {lead_email: original})
    assert await ingest(sent, fetched(answer_raw)) == 1
    [thread] = [t.id for t in await threads_of(ws) if t.lead_id == lead]
    reply_id = header_block(answer_raw)["message-id"]
    return {
        "box": box,
        "user": user,
        "password": password,
        "lead": lead,
        "lead_email": lead_email,
        "send": send,
        "thread": thread,
        "campaign": cid,
        "reply_id": reply_id,
        "sent": sent,
        "original": original,
    }


async def reply(http: httpx.AsyncClient, ws: WorkspaceHandle, thread: str, body: dict[str, Any]) -> Any:
    return await http.post(f"{API}/threads/{thread}/reply", headers=ws.headers, json=body)


async def test_a_reply_goes_out_threaded_is_recorded_and_lands_in_sent(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    c = await conversation(http, ws, mail_servers)
    response = await reply(http, ws, c["thread"], {"body": "Hi Grace,\n\nTuesday at 10 works for me."})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["sentFolder"] == "appended"
    sent = answer["message"]
    assert (sent["direction"], sent["kind"], sent["subject"]) == ("out", "manual", "Re: Hello Grace")
    assert sent["from"] == c["user"] and sent["to"] == [c["lead_email"]]
    assert "Tuesday at 10 works for me." in sent["text"] and "Sender Co" in sent["text"]

    # what the lead's server received, byte for byte where it matters
    [raw] = replies(mail_servers, c["lead_email"])
    headers = header_block(raw)
    assert headers["in-reply-to"] == c["reply_id"]
    assert headers["references"] == f"{c['send'].message_id} {c['reply_id']}"
    assert headers["message-id"] == answer["messageId"] and answer["messageId"].endswith("@mail.test>")
    assert headers["from"] == f"Sam Sender <{c['user']}>"
    assert headers["to"] == c["lead_email"]
    assert headers["subject"] == "Re: Hello Grace"
    assert "list-unsubscribe" not in headers
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    text = parsed.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    html = parsed.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert "Hi Grace," in text and "Tuesday at 10 works for me." in text and "Sender Co" in text
    assert "<p>Tuesday at 10 works for me.</p>" in html

    # the copy in the Sent folder, read and identical
    [(flags, stored)] = await folder_messages(
        mail_servers.imap, mail_servers.ca, c["user"], c["password"], "Sent"
    )
    assert "\\Seen" in flags
    assert header_block(stored)["message-id"] == answer["messageId"]
    assert stored.replace(b"\r\n", b"\n") == raw.replace(b"\r\n", b"\n")

    # the thread holds it last, is read, and counts it
    thread = (await http.get(f"{API}/threads/{c['thread']}", headers=ws.headers)).json()
    assert [(m["direction"], m["kind"]) for m in thread["messages"]] == [
        ("out", "campaign"),
        ("in", "reply"),
        ("out", "manual"),
    ]
    assert thread["messages"][-1] == sent
    assert thread["unread"] is False and thread["messageCount"] == 2
    assert thread["lastMessageAt"] == sent["at"]

    # a second reply answers the lead's message again and keeps the whole chain
    again = await reply(http, ws, c["thread"], {"body": "One more thing.", "subject": "Agenda"})
    assert again.status_code == 200, again.text
    second = header_block(replies(mail_servers, c["lead_email"])[-1])
    assert second["subject"] == "Agenda" and second["in-reply-to"] == c["reply_id"]
    assert second["references"] == f"{c['send'].message_id} {answer['messageId']} {c['reply_id']}"


async def test_without_a_sent_folder_the_reply_is_sent_and_says_why_no_copy(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    c = await conversation(http, ws, mail_servers, sent_folder=None)
    response = await reply(http, ws, c["thread"], {"body": "Thanks!"})
    assert response.status_code == 200, response.text
    assert response.json()["sentFolder"].startswith("not appended: the mailbox has no Sent folder")
    assert len(replies(mail_servers, c["lead_email"])) == 1
    thread = (await http.get(f"{API}/threads/{c['thread']}", headers=ws.headers)).json()
    assert thread["messages"][-1]["kind"] == "manual" and thread["messageCount"] == 2


SPECIAL_USE = """
namespace inbox {{
  inbox = yes
  mailbox Gesendet {{
    special_use = \\Sent
  }}
}}
"""


@pytest.fixture(scope="module")
def special_use_dovecot(mail_servers: MailServers) -> Iterator[Dovecot]:
    """A second Dovecot whose folder "Gesendet" is marked \\Sent (RFC 6154), sharing the test users."""
    conf = mail_servers_module._DOVECOT_CONF
    mail_servers_module._DOVECOT_CONF = conf + SPECIAL_USE
    server = Dovecot(
        Path(tempfile.mkdtemp(prefix="outreach-dovecot-su-")), mail_servers.ca, mail_servers.users
    )
    try:
        server.start()
    finally:
        mail_servers_module._DOVECOT_CONF = conf
    yield server
    server.stop()


async def test_a_special_use_sent_folder_wins_over_the_usual_names(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    special_use_dovecot: Dovecot,
) -> None:
    ws = await make_workspace()
    c = await conversation(http, ws, mail_servers, sent_folder=None)
    dovecot = special_use_dovecot
    box = (dovecot, mail_servers.ca, c["user"], c["password"])
    for name in ("Gesendet", "Sent"):
        assert (await create_folder(*box, name)).startswith("OK")
    await update_rows(ws, "mailboxes", {"imap_port": dovecot.tls_port}, id=c["box"])
    response = await reply(http, ws, c["thread"], {"body": "Danke!"})
    assert response.json()["sentFolder"] == "appended", response.text
    assert len(await folder_messages(*box, "Gesendet")) == 1
    assert await folder_messages(*box, "Sent") == []


async def test_a_refused_hand_off_is_an_error_and_records_nothing(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    c = await conversation(http, ws, mail_servers)
    server = mail_servers.smtp["starttls"]
    lead = c["lead_email"]
    server.rcpt_reply = lambda address: (
        "550 5.1.1 <" + address + ">: no such user" if address == lead else None
    )
    try:
        response = await reply(http, ws, c["thread"], {"body": "Hello?"})
    finally:
        server.rcpt_reply = None
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "delivery_failed"
    assert (error["details"]["phase"], error["details"]["smtpCode"]) == ("rcpt", 550)
    assert "no such user" in error["details"]["reason"]
    assert "Nothing was sent or recorded" in error["message"]
    assert replies(mail_servers, lead) == []
    box = (mail_servers.imap, mail_servers.ca, c["user"], c["password"])
    assert await folder_messages(*box, "Sent") == []
    thread = (await http.get(f"{API}/threads/{c['thread']}", headers=ws.headers)).json()
    assert [m["kind"] for m in thread["messages"]] == ["campaign", "reply"] and thread["unread"] is True


async def test_each_refusal_names_its_real_cause_and_nothing_is_sent(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()

    async def refused(c: dict[str, Any]) -> dict[str, Any]:
        response = await reply(http, ws, c["thread"], {"body": "Sorry to hear."})
        assert response.status_code == 409, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_state" and error["details"]["leadId"] == c["lead"]
        assert replies(mail_servers, c["lead_email"]) == []
        return dict(error)

    # the campaign's email bounced (a hard bounce read from the mailbox): the refusal says so
    bounced = await conversation(http, ws, mail_servers)
    rcpt = bounced["lead_email"]
    report = dsn(
        bounced["original"], "5.1.1", f"550 5.1.1 <{rcpt}>: Recipient address rejected: User unknown"
    )
    assert await ingest(bounced["sent"], fetched(report)) == 1
    error = await refused(bounced)
    assert error["message"].startswith(f"Email to {rcpt} bounced (5.1.1 user unknown)"), error
    assert error["details"]["cause"] == "bounced" and "unsubscribed" not in error["message"]

    # the lead asked to be removed, in its own words
    gone = await conversation(http, ws, mail_servers)
    asked = reply_to(gone["original"], "Please remove me from your mailing list.")
    assert await ingest(gone["sent"], fetched(asked)) == 1
    error = await refused(gone)
    assert error["message"] == f"{gone['lead_email']} unsubscribed: the service never emails it again."
    assert error["details"]["cause"] == "unsubscribed"

    # a person put the address on the suppression list, with a reason
    listed = await conversation(http, ws, mail_servers)
    add = {"entries": [listed["lead_email"]], "reason": "asked by phone"}
    assert (await http.post(f"{API}/suppressions", headers=ws.headers, json=add)).status_code == 200
    error = await refused(listed)
    assert error["message"].startswith(
        f"{listed['lead_email']} is on the suppression list (reason: asked by phone)"
    )
    assert error["details"]["cause"] == "suppressed" and error["details"]["reason"] == "asked by phone"

    # the whole domain is suppressed
    domain = await conversation(http, ws, mail_servers)
    add = {"entries": ["hopper.example"], "reason": "competitor"}
    assert (await http.post(f"{API}/suppressions", headers=ws.headers, json=add)).status_code == 200
    error = await refused(domain)
    assert error["message"].startswith(
        "The domain hopper.example is on the suppression list (reason: competitor)"
    )
    assert error["details"]["cause"] == "domain_suppressed"


async def test_bad_input_and_missing_threads(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    c = await conversation(http, ws, mail_servers)
    for body in (
        {},
        {"body": ""},
        {"body": "x" * 100_001},
        {"body": "x", "subject": ""},
        {"body": "x", "cc": "y"},
    ):
        response = await reply(http, ws, c["thread"], body)
        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_input", body
    empty = await reply(http, ws, c["thread"], {"body": "<script>alert(1)</script>"})
    assert empty.status_code == 422 and empty.json()["error"]["details"]["fields"][0]["path"] == "body"
    missing = await reply(http, ws, "thr_missing", {"body": "hi"})
    assert missing.status_code == 404
    # a subject with a line break cannot add a header: it is folded onto one line
    folded = await reply(http, ws, c["thread"], {"body": "ok", "subject": "Hi\r\nBcc: x@evil.example"})
    assert folded.status_code == 200, folded.text
    [raw] = replies(mail_servers, c["lead_email"])
    headers = header_block(raw)
    assert "bcc" not in headers and headers["subject"] == "Hi Bcc: x@evil.example"
