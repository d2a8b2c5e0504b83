"""NUL characters in received mail (a stray byte, a quoted-printable `=00` as in the corpus's Exchange Online
notice): read as nothing, so the message is recorded on both engines (PostgreSQL stores no NUL in text or
JSON, and one failed the whole batch at every try: the mailbox stopped being read)."""

from __future__ import annotations

import httpx

from outreach_core.inbox.rules import classify, parse_message
from outreach_core.kernel.context import scoped
from outreach_core.kernel.db.tables import outbox
from tests.conftest import MakeWorkspace
from tests.inbox.ingest import dsn, fetched, ingest, lead_row, messages_of, read, sent_campaign
from tests.mail_servers import SmtpServer, Users

NOTICE = (
    b"From: Mail Delivery System <MAILER-DAEMON@mx.nul.example>\r\n"
    b"To: sender@mail.test\r\n"
    b"Subject: Undeliverable: Hello\x00 there\r\n"
    b"Message-ID: <nul-1@mx.nul.example>\r\n"
    b"MIME-Version: 1.0\r\n"
    b"Content-Type: text/plain; charset=us-ascii\r\n"
    b"Content-Transfer-Encoding: quoted-printable\r\n"
    b"\r\n"
    b"Delivery has failed to these recipients:\r\n"
    b"\r\n"
    b"nul.nat@nul-corp.example\r\n"
    b"Remote Server returned '550 5.1.1 RESOLVER.ADR.RecipNotFound; not found'\r\n"
    b"See <http://go.example/fwlink/?LinkId=00000000> and a stray \x00 byte.\r\n"
)


def test_the_parser_never_hands_over_a_nul_character() -> None:
    parsed = parse_message(NOTICE)
    verdict = classify(parsed)
    assert parsed.subject == "Undeliverable: Hello there"
    assert "LinkId000000" in parsed.text and "stray  byte" in parsed.text
    assert verdict.kind == "bounce", verdict.reason
    texts = [parsed.subject, parsed.text, verdict.reason]
    texts += [f"{b.recipient} {b.reason} {b.diagnostic}" for b in verdict.bounces]
    assert not [t for t in texts if "\x00" in t]


async def test_a_bounce_holding_nul_characters_is_recorded(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    lead = "nul.nat@nul-corp.example"
    sent = await sent_campaign(http, ws, smtp_servers["starttls"], mail_users, [lead])
    raw = dsn(sent.received[lead], "5.1.1", f"550 5.1.1 <{lead}>: user\x00 unknown")
    raw = raw.replace(b"I'm sorry", b"LinkId=00000000 I'm sorry").replace(
        b"Content-Type: text/plain; charset=us-ascii\r\n",
        b"Content-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: quoted-printable\r\n",
    )
    assert await ingest(sent, fetched(raw)) == 1
    [message] = await messages_of(ws)
    assert message.kind == "bounce" and "LinkId000000" in message.text and "\x00" not in message.text
    assert (await lead_row(ws, sent.leads[lead])).status == "bounced"
    [event] = [
        e for e in await read(ws, lambda ctx: scoped(ctx, outbox).select()) if e.kind == "lead.bounced"
    ]
    assert "user unknown" in event.payload["data"]["bounce"]["reason"]
