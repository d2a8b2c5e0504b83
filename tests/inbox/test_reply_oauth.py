"""`reply_to_thread` from a Google mailbox connected over OAuth (issue 32 item 3): the reply reaches the SMTP
server (aiosmtpd) authenticated with AUTH XOAUTH2, the bytes it got being exactly the SASL XOAUTH2 initial
response for the mailbox and a live access token (refreshed first: the one of the campaign's email had too
little life left), and its copy lands in the Sent folder through Dovecot's XOAUTH2 (`oauth2` passdb)."""

from __future__ import annotations

import email
import email.policy
from collections.abc import AsyncIterator
from dataclasses import replace
from email.message import EmailMessage

import httpx
import pytest

from outreach_app.adapters import SmtpMailSender
from outreach_core.kernel.runtime import Runtime
from tests.campaigns.helpers import add_lead
from tests.conftest import MakeWorkspace
from tests.imap_client import Maildrop
from tests.inbox.ingest import Sent, fetched, ingest, reply_to, threads_of
from tests.mail_servers import MailCA
from tests.oauth_mail_servers import Google, connect_oauth, google_mailboxes, oauth_mailbox
from tests.sending.helpers import launched_campaign, received_by
from workers import sender

API = "/api/v1"


@pytest.fixture
async def google(runtime: Runtime, mail_ca: MailCA) -> AsyncIterator[Google]:
    async with google_mailboxes(runtime, mail_ca) as configured:
        yield configured


async def test_a_thread_reply_from_an_oauth_mailbox_authenticates_with_xoauth2(
    google: Google, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    google.provider.access_ttl_s = 60  # under the 5 minutes ahead: each login refreshes first
    address = "liz@gmail.test"
    ws = await make_workspace()
    page, _ = await connect_oauth(google, ws, address)
    assert "Mailbox connected" in page.text, page.text
    box = await oauth_mailbox(google, ws, address)
    # the owner's own mail client (a password on the same Dovecot) gives the mailbox a Sent folder
    google.imap.users.add(address, "owner-client-password")
    owner = Maildrop(google, address, "owner-client-password")
    await owner.command("create", "Sent")

    lead_email = "grace@hopper.example"
    lead = await add_lead(ws, lead_email, first_name="Grace")
    cid = await launched_campaign(http, ws, [box["id"]], [lead])
    # the sender worker runs in a process of its own: its SMTP connections are not the server's
    worker_smtp = SmtpMailSender(
        tls_ca_file=google.runtime.settings.tls_ca_file, timeout_s=5.0, allow_private=True
    )
    worker = Runtime(
        google.runtime.settings,
        engine=google.runtime.engine,
        ports=replace(google.runtime.ports, smtp=worker_smtp),
    )
    try:
        assert await sender.tick(worker) >= 1
    finally:
        await worker_smtp.aclose()
    [first] = received_by(google.smtp, lead_email)
    answer = reply_to(first, "Sounds good, tell me more.")
    sent = Sent(ws, box["id"], address, cid, {lead_email: lead}, {lead_email: first})
    assert await ingest(sent, fetched(answer)) == 1
    [thread] = [t.id for t in await threads_of(ws) if t.lead_id == lead]
    sasl_before = len(google.smtp.xoauth2_sasl)

    async with httpx.AsyncClient(base_url=google.base, timeout=30) as client:
        replied = await client.post(
            f"{API}/threads/{thread}/reply", headers=ws.headers, json={"body": "Hi Grace,\n\nTuesday?"}
        )
    assert replied.status_code == 200, replied.text
    assert replied.json()["sentFolder"] == "appended"

    # what the SMTP server got: one AUTH XOAUTH2 with the mailbox and the live (just refreshed) token
    assert google.provider.grants == ["authorization_code", "refresh_token", "refresh_token"]
    [token] = google.provider.live_tokens(address)
    assert google.smtp.xoauth2_sasl[sasl_before:] == [
        f"user={address}\x01auth=Bearer {token}\x01\x01".encode()
    ]
    [_, raw] = _raw(google, lead_email)
    wire = email.message_from_bytes(raw, policy=email.policy.SMTP)
    assert isinstance(wire, EmailMessage)
    assert wire["In-Reply-To"] == answer_id(answer) and wire["From"].addresses[0].addr_spec == address
    assert "Tuesday?" in wire.get_body(("plain",)).get_content()  # type: ignore[union-attr]

    # the Sent copy went through Dovecot's XOAUTH2 with the same token
    [(flags, stored)] = await owner.messages("Sent")
    copy = email.message_from_bytes(stored, policy=email.policy.SMTP)
    assert "\\Seen" in flags and copy["Message-ID"] == wire["Message-ID"]
    assert google.imap.log().count(f"user=<{address}>, method=XOAUTH2") == 2  # the test, then the copy


def _raw(google: Google, address: str) -> list[bytes]:
    with google.smtp.lock:
        return [m.data for m in google.smtp.messages if address in m.rcpt_tos]


def answer_id(raw: bytes) -> str:
    parsed = email.message_from_bytes(raw, policy=email.policy.SMTP)
    return str(parsed["Message-ID"])
