"""Headers as the receiving server gets them (raw bytes recorded by aiosmtpd), read the way Gmail and Yahoo
read them: the header as written, unfolded, never decoded. URLs and message ids must be plain ASCII, folded
only between items, never RFC 2047 encoded words (issue 15, item 1)."""

from __future__ import annotations

import re

import httpx

from tests.conftest import MakeWorkspace
from tests.mail_servers import Received, SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, parse, rows, smtp_mailbox, update_rows
from workers import sender

LONG_DOMAIN = "outbound-mail.a-rather-long-sending-subdomain.example-company-name.test"


def raw_messages(server: SmtpServer, address: str) -> list[Received]:
    with server.lock:
        return [m for m in server.messages if address in m.rcpt_tos]


def raw_headers(data: bytes) -> dict[str, list[tuple[str, list[str]]]]:
    """Header name (lower case) -> [(value unfolded as RFC 5322 says, the physical lines)], from the bytes
    as received: nothing decoded."""
    head = data.split(b"\r\n\r\n", 1)[0].decode("utf-8")
    fields: list[list[str]] = []
    for line in re.split(r"\r?\n", head):
        if line[:1] in (" ", "\t") and fields:
            fields[-1].append(line)
        else:
            fields.append([line])
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for lines in fields:
        name, _, first = lines[0].partition(":")
        unfolded = first + "".join(lines[1:])  # unfolding removes the CRLF before each continuation
        found.setdefault(name.lower(), []).append((unfolded.strip(), lines))
    return found


def only(headers: dict[str, list[tuple[str, list[str]]]], name: str) -> tuple[str, list[str]]:
    [entry] = headers[name.lower()]
    return entry


def plain(value: str, lines: list[str]) -> bool:
    """Plain ASCII, no encoded word, every line within RFC 5322's 998 characters."""
    return value.isascii() and "=?" not in value and all(len(line) <= 998 for line in lines)


async def test_one_click_unsubscribe_works_as_gmail_reads_the_header(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["starttls"]
    box = await smtp_mailbox(ws, server, mail_users)
    lead = await add_lead(ws, "one-click@reader.example")
    await launched_campaign(http, ws, [box], [lead])
    await sender.tick(ws.runtime)

    [received] = raw_messages(server, "one-click@reader.example")
    headers = raw_headers(received.data)
    value, lines = only(headers, "List-Unsubscribe")
    assert plain(value, lines), lines
    assert len(f"List-Unsubscribe: {value}") > 78  # long enough to need folding: once sent encoded
    assert value.startswith("<http") and value.endswith(">") and " " not in value
    url = value[1:-1]
    assert only(headers, "List-Unsubscribe-Post")[0] == "List-Unsubscribe=One-Click"
    message_id, id_lines = only(headers, "Message-ID")
    assert plain(message_id, id_lines) and re.fullmatch(r"<[^<>\s]+@mail\.test>", message_id)

    # the header's link is the body's, and the POST a mail provider sends for one click unsubscribes
    html = parse(received.data).get_body(("html",))
    assert html is not None and url in html.get_content()
    async with httpx.AsyncClient(timeout=10) as provider:
        response = await provider.post(
            url,
            content=b"List-Unsubscribe=One-Click",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    assert response.status_code == 200 and "Unsubscribed" in response.text
    [person] = await rows(ws, "leads", id=lead)
    assert person.status == "unsubscribed"


async def test_follow_ups_carry_the_threads_ids_folded_plain(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """Four emails: 2 and 4 in the first email's thread, 3 a new thread. Each same-thread follow-up answers
    the thread's latest email and lists the thread's ids oldest first (RFC 5322 3.6.4); ids on a long
    mailbox domain make the headers longer than a line, and they are folded between ids, never encoded."""
    ws = await make_workspace()
    server = smtp_servers["tls"]
    box = await smtp_mailbox(ws, server, mail_users, domain=LONG_DOMAIN)
    lead = await add_lead(ws, "thread-reader@reader.example")
    steps = [
        {"variants": [{"subject": "First note", "body": "One. {{unsubscribe}}"}]},
        {"waitDays": 1, "variants": [{"subject": "", "body": "Two."}]},
        {"waitDays": 1, "sameThread": False, "variants": [{"subject": "A new topic", "body": "Three."}]},
        {"waitDays": 1, "variants": [{"subject": "", "body": "Four."}]},
    ]
    cid = await launched_campaign(http, ws, [box], [lead], steps=steps)
    for _ in range(4):
        await sender.tick(ws.runtime)
        [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
        await update_rows(ws, "campaign_leads", {"next_at": cl.last_sent_at}, id=cl.id)
        await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)

    received = [raw_headers(m.data) for m in raw_messages(server, "thread-reader@reader.example")]
    assert len(received) == 4
    ids = []
    for headers in received:
        message_id, lines = only(headers, "Message-ID")
        assert plain(message_id, lines) and message_id.endswith(f"@{LONG_DOMAIN}>")
        assert len(f"Message-ID: {message_id}") > 78  # once sent as encoded words
        ids.append(message_id)
    first, second, third, fourth = received
    assert "in-reply-to" not in first and "references" not in first
    assert "in-reply-to" not in third and "references" not in third  # a new thread
    assert only(second, "In-Reply-To")[0] == ids[0] and only(second, "References")[0] == ids[0]
    assert only(fourth, "In-Reply-To")[0] == ids[1]
    references, lines = only(fourth, "References")
    assert references.split() == [ids[0], ids[1]]
    assert plain(references, lines) and len(lines) == 2  # folded between the two ids
    for headers in (second, fourth):
        for name in ("In-Reply-To", "References"):
            assert plain(*only(headers, name))
    assert only(fourth, "Subject")[0] == "Re: First note"
