"""Ingesting folder batches: replies to emails the sender really sent become threads with their effects;
idempotency; matching only inside the workspace; forwarded replies; malformed mail not stopping a batch."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import inbox_folders, outbox
from tests.conftest import MakeWorkspace
from tests.inbox.ingest import (
    Sent,
    fetched,
    ingest,
    lead_row,
    messages_of,
    read,
    reply_to,
    sent_campaign,
    threads_of,
)
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import rows


@pytest.fixture
def smtp(smtp_servers: dict[str, SmtpServer]) -> SmtpServer:
    return smtp_servers["starttls"]


async def events(ws: Any, kind: str | None = None) -> list[dict[str, Any]]:
    found = await read(ws, lambda ctx: scoped(ctx, outbox).select().order_by(outbox.c.seq))
    return [e.payload for e in found if kind is None or e.kind == kind]


async def checkpoint(sent: Sent, folder: str = "INBOX") -> Any:
    def stmt(ctx: WorkspaceContext) -> Any:
        return (
            scoped(ctx, inbox_folders)
            .select()
            .where(inbox_folders.c.mailbox_id == sent.mailbox_id, inbox_folders.c.folder == folder)
        )

    found = await read(sent.ws, stmt)
    return found[0] if found else None


async def test_a_reply_becomes_a_thread_and_stops_the_sequence(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    sent = await sent_campaign(http, ws, smtp, mail_users, ["ann@ann-corp.example"])
    original = sent.received["ann@ann-corp.example"]
    [send] = await rows(ws, "sends", campaign_id=sent.campaign_id)
    assert send.message_id == original["Message-ID"]

    raw = reply_to(original, "Sounds interesting, can you send me pricing?")
    assert await ingest(sent, fetched(raw, uid=11)) == 1

    [thread] = await threads_of(ws)
    assert (thread.kind, thread.campaign_id, thread.mailbox_id) == (
        "reply",
        sent.campaign_id,
        sent.mailbox_id,
    )
    assert thread.lead_id == sent.leads["ann@ann-corp.example"]
    assert thread.unread is True and thread.message_count == 1
    assert thread.subject == f"Re: {original['Subject']}"
    assert thread.label_id is None and thread.label_source == "rules"
    assert "no label" in thread.label_reason
    assert "ann@ann-corp.example" in thread.search_text
    [message] = await messages_of(ws)
    assert (message.direction, message.kind, message.uid, message.folder) == ("in", "reply", 11, "INBOX")
    assert message.send_id == send.id and message.forwarded is False
    assert message.from_email == "ann@ann-corp.example"
    assert message.text.startswith("Sounds interesting")
    lead = await lead_row(ws, thread.lead_id)
    assert lead.status == "replied"
    [cl] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert cl.status == "replied" and cl.next_at is None and cl.finished_at is not None
    [event] = await events(ws, "lead.replied")
    data = event["data"]
    assert data["lead"]["status"] == "replied" and data["thread"]["id"] == thread.id
    assert data["campaign"]["id"] == sent.campaign_id
    assert data["step"] == {"id": send.step_id, "position": 0}
    assert data["variant"] == {"id": send.variant_id, "label": "A"}
    assert data["message"]["text"].startswith("Sounds interesting")
    assert data["message"]["from"] == "ann@ann-corp.example"
    saved = await checkpoint(sent)
    assert (saved.uidvalidity, saved.last_uid) == (7, 11)


async def test_the_same_batch_twice_and_a_new_uidvalidity_record_nothing_twice(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    sent = await sent_campaign(http, ws, smtp, mail_users, ["bo@bo-corp.example"])
    raw = reply_to(sent.received["bo@bo-corp.example"], "Not now, thanks.")
    assert await ingest(sent, fetched(raw, uid=5)) == 1
    assert await ingest(sent, fetched(raw, uid=5)) == 0
    # the server renumbered the folder: the same message under a new UIDVALIDITY is known by its Message-ID
    assert await ingest(sent, fetched(raw, uid=1), uidvalidity=8) == 0
    assert len(await messages_of(ws)) == 1
    assert len(await events(ws, "lead.replied")) == 1
    saved = await checkpoint(sent)
    assert (saved.uidvalidity, saved.last_uid) == (8, 1)


async def test_a_forged_in_reply_to_never_matches_another_workspaces_email(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    victim = await make_workspace()
    theirs = await sent_campaign(http, victim, smtp, mail_users, ["vic@victim-corp.example"])
    attacker = await make_workspace()
    mine = await sent_campaign(http, attacker, smtp, mail_users, ["someone@else.example"])
    # a stranger replies to the attacker's mailbox, threading on the victim's Message-ID
    forged = reply_to(
        theirs.received["vic@victim-corp.example"], "Hello", sender="Mallory <mallory@evil.example>"
    )
    assert await ingest(mine, fetched(forged, uid=3)) == 0
    assert await threads_of(attacker) == [] and await threads_of(victim) == []
    assert (await checkpoint(mine)).last_uid == 3  # ignored, yet read: the checkpoint moves on


async def test_a_reply_from_another_address_in_the_thread_is_flagged_forwarded(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    sent = await sent_campaign(http, ws, smtp, mail_users, ["cy@cy-corp.example"])
    raw = reply_to(
        sent.received["cy@cy-corp.example"], "Cy forwarded me this. Let's talk.",
        sender="Dee Colleague <dee@cy-corp.example>",
    )  # fmt: skip
    assert await ingest(sent, fetched(raw)) == 1
    [thread] = await threads_of(ws)
    assert thread.lead_id == sent.leads["cy@cy-corp.example"]
    [message] = await messages_of(ws)
    assert message.forwarded is True and message.from_email == "dee@cy-corp.example"


async def test_unmatched_mail_is_ignored_and_malformed_mail_does_not_stop_the_batch(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    sent = await sent_campaign(http, ws, smtp, mail_users, ["di@di-corp.example"])
    broken = (
        b"From: \xff\xfe broken <x@nowhere.example>\r\nContent-Type: multipart/mixed\r\n"
        b"Subject: =?bogus?q?x?=\r\n\r\n--no-boundary\r\n\x00\x01garbage"
    )
    newsletter = (
        b"From: news@shop.example\r\nSubject: Sale\r\nMessage-ID: <n1@shop.example>\r\n\r\nBuy now\r\n"
    )
    good = reply_to(sent.received["di@di-corp.example"], "Yes please, call me.")
    recorded = await ingest(sent, fetched(broken, uid=1), fetched(newsletter, uid=2), fetched(good, uid=3))
    assert recorded == 1
    [message] = await messages_of(ws)
    assert message.uid == 3
    assert (await checkpoint(sent)).last_uid == 3


async def test_mail_that_arrived_before_the_mailbox_was_connected_is_not_read(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    from datetime import UTC, datetime, timedelta

    from tests.sending.helpers import update_rows

    ws = await make_workspace()
    sent = await sent_campaign(http, ws, smtp, mail_users, ["el@el-corp.example"])
    since = datetime.now(UTC)
    await update_rows(ws, "mailboxes", {"inbox_since": since}, id=sent.mailbox_id)
    raw = reply_to(sent.received["el@el-corp.example"], "Old answer.")
    assert await ingest(sent, fetched(raw, uid=1, at=since - timedelta(minutes=1))) == 0
    assert await ingest(sent, fetched(raw, uid=2, at=since + timedelta(minutes=1))) == 1
