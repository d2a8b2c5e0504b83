"""Warmup between a Google mailbox connected over OAuth and a password mailbox (issue 32 items 1 and 3): the
OAuth mailbox sends its warmup email through an aiosmtpd taking only AUTH XOAUTH2 and finds the other's in
its INBOX through Dovecot's XOAUTH2 (`oauth2` passdb asking the local provider); each side's email is
delivered into the other's Dovecot by a bridge, and each side recognises the one it received."""

from __future__ import annotations

import email
import email.policy
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest

from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from outreach_core.warmup.pipeline import warmup_pass
from outreach_core.warmup.rules import HEADER
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.imap_client import Maildrop
from tests.mail_servers import MailCA, MailServers, Received
from tests.mailboxes.helpers import API
from tests.oauth_mail_servers import Google, connect_oauth, google_mailboxes, oauth_mailbox
from tests.warmup.helpers import Bridge, messages_rows, pool_mailbox, warmup_runtime


@pytest.fixture
async def google(runtime: Runtime, mail_ca: MailCA) -> AsyncIterator[Google]:
    async with google_mailboxes(runtime, mail_ca) as configured:
        yield configured


async def _enable(http: httpx.AsyncClient, ws: WorkspaceHandle, mailbox_id: str) -> None:
    body = {"warmup": {"enabled": True, "replyRate": 0}}
    response = await http.patch(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json=body)
    assert response.status_code == 200, response.text


async def test_an_oauth_mailbox_and_a_password_mailbox_warm_each_other_up(
    google: Google, http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime,
    mail_servers: MailServers, bridge: Bridge,
) -> None:  # fmt: skip
    a, b = await make_workspace(), await make_workspace()
    a_email = "wes@gmail.test"
    page, _ = await connect_oauth(google, a, a_email)
    assert "Mailbox connected" in page.text, page.text
    a_id = (await oauth_mailbox(google, a, a_email))["id"]
    b_id, b_email, b_password = await pool_mailbox(b, mail_servers)

    # delivery: what the OAuth mailbox sends lands in b's Dovecot (`bridge`), what b sends in the OAuth
    # mailbox's Dovecot, where the test also reads with a password of its own (the owner's mail client)
    google.imap.users.add(a_email, "owner-client-password")
    oauth_side = Bridge(MailServers(google.ca, google.imap.users, {}, google.imap))
    session_smtp = mail_servers.smtp["starttls"]

    def both(received: Received) -> None:
        bridge(received)
        oauth_side(received)

    session_smtp.on_message = both  # the `bridge` fixture puts back what was there
    google.smtp.on_message = bridge
    await _enable(http, a, a_id)
    await _enable(http, b, b_id)
    clock = FixedClock(datetime.now(UTC))
    rt = warmup_runtime(google.runtime, clock)

    await warmup_pass(rt)  # plans the day: the first sends are spread over the next minutes
    clock.advance(minutes=11)
    assert await warmup_pass(rt) >= 2
    [to_b] = bridge.to(b_email)
    [to_a] = oauth_side.to(a_email)
    assert to_b.mail_from == a_email and to_a.mail_from == b_email, (bridge.errors, oauth_side.errors)
    assert google.smtp.xoauth2_logins.count(a_email) == 2  # the connection test, then the warmup email
    tokens = {
        a_email: email.message_from_bytes(to_a.data, policy=email.policy.SMTP)[HEADER],
        b_email: email.message_from_bytes(to_b.data, policy=email.policy.SMTP)[HEADER],
    }
    assert all(t and t.startswith("wu1-") for t in tokens.values())

    # the next passes look into each recipient's INBOX: both emails are recognised there
    for _ in range(5):
        clock.advance(minutes=1)
        await warmup_pass(rt)
        rows = {r.token: r for r in await messages_rows(runtime)}
        if all(rows[t].landed for t in tokens.values()):
            break
    assert rows[tokens[a_email]].landed == "inbox" and rows[tokens[a_email]].to_mailbox_id == a_id
    assert rows[tokens[b_email]].landed == "inbox" and rows[tokens[b_email]].to_mailbox_id == b_id
    assert "user=<wes@gmail.test>, method=XOAUTH2" in google.imap.log()  # the OAuth mailbox's own look
    [(flags, raw)] = await Maildrop(google, a_email, "owner-client-password").messages("INBOX")
    assert {"\\Seen", "\\Flagged"} <= flags and tokens[a_email].encode() in raw
    [(b_flags, _)] = await Maildrop(mail_servers, b_email, b_password).messages("INBOX")
    assert {"\\Seen", "\\Flagged"} <= b_flags
