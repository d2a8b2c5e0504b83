"""What counts as a message already recorded, and which reports count as our own mail: bounces of emails the
sender really sent, ingested from folder batches (issue 25, item 6: recognised bounces that never became
bounce threads)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.conftest import MakeWorkspace
from tests.inbox.ingest import dsn, fetched, ingest, lead_row, messages_of, threads_of
from tests.inbox.ingest import sent_campaign as send
from tests.mail_servers import SmtpServer, Users

_OWN_ID = re.compile(rb"^Message-ID: .*$", re.MULTILINE)


@pytest.fixture
def smtp(smtp_servers: dict[str, SmtpServer]) -> SmtpServer:
    return smtp_servers["starttls"]


def numbered(raw: bytes, message_id: str) -> bytes:
    """The notice with the Message-ID its generator gave it."""
    return _OWN_ID.sub(f"Message-ID: {message_id}\r".encode(), raw, count=1)


async def test_distinct_bounces_that_share_a_message_id_are_each_recorded(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    """A notice generator that numbers its notices badly gives three bounces one Message-ID: each returns
    another email of ours, and each lead's address is dead."""
    ws = await make_workspace()
    a, b, c = "dup.ann@dup-corp.example", "dup.ben@dup-corp.example", "dup.cat@dup-corp.example"
    sent = await send(http, ws, smtp, mail_users, [a, b, c])
    one_id = "<notice-1@mx.dup-corp.example>"
    bounced = {
        lead: numbered(dsn(sent.received[lead], "5.1.1", f"550 5.1.1 <{lead}>: user unknown"), one_id)
        for lead in (a, b, c)
    }
    assert await ingest(sent, fetched(bounced[a], uid=1), fetched(bounced[b], uid=2)) == 2
    assert await ingest(sent, fetched(bounced[c], uid=3)) == 1

    threads = await threads_of(ws)
    assert sorted(t.lead_id for t in threads) == sorted(sent.leads.values())
    assert {t.kind for t in threads} == {"bounce"}
    for lead in (a, b, c):
        assert (await lead_row(ws, sent.leads[lead])).status == "bounced"
    assert sorted(m.bounce["recipient"] for m in await messages_of(ws)) == [a, b, c]


async def test_the_same_bounce_in_two_folders_or_read_again_is_recorded_once(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    lead = "copy.dan@copy-corp.example"
    sent = await send(http, ws, smtp, mail_users, [lead])
    raw = dsn(sent.received[lead], "5.1.1", f"550 5.1.1 <{lead}>: user unknown")
    assert await ingest(sent, fetched(raw, uid=1), fetched(raw, uid=2)) == 1  # delivered twice
    # a copy in the junk folder, a header added by the filter that put it there
    assert await ingest(sent, fetched(b"X-Spam-Flag: YES\r\n" + raw, uid=1), folder="Junk") == 0
    # the server renumbered INBOX: the same message under a new UIDVALIDITY, its lines ending in LF only
    assert await ingest(sent, fetched(raw.replace(b"\r\n", b"\n"), uid=1), uidvalidity=8) == 0
    [message] = await messages_of(ws)
    assert (message.kind, message.folder, message.uid) == ("bounce", "INBOX", 1)


async def test_a_bounce_that_names_our_own_address_as_its_sender_is_a_bounce(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    """Some report generators write the address they report to as the sender too: the report is still
    about our email (a person's message from that address is our own writing and is never recorded)."""
    ws = await make_workspace()
    lead = "self.eve@self-corp.example"
    sent = await send(http, ws, smtp, mail_users, [lead])
    raw = dsn(sent.received[lead], "5.1.1", f"550 5.1.1 <{lead}>: user unknown")
    raw = raw.replace(
        b"From: Mail Delivery System <MAILER-DAEMON@mx.lead.example>",
        f"From: Mail Delivery System <{sent.mailbox_email}>".encode(),
    )
    assert await ingest(sent, fetched(raw)) == 1
    [thread] = await threads_of(ws)
    assert (thread.kind, thread.lead_id) == ("bounce", sent.leads[lead])
    assert (await lead_row(ws, sent.leads[lead])).status == "bounced"
