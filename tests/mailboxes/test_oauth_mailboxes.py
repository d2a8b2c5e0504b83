"""Google and Microsoft mailboxes over OAuth (issue 32 item 3), against a local OAuth provider
(tests/oauth_mail_servers.py), an aiosmtpd that takes AUTH XOAUTH2 and checks the bearer, and a Dovecot
taking AUTHENTICATE XOAUTH2 through its `oauth2` passdb, which asks the provider's introspection endpoint.
The flow is followed with a real HTTP client, redirects not followed: start, the provider's authorize
redirect, the callback page. Nothing here talks to Google or Microsoft."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mail_servers import HOST, MailCA
from tests.oauth_mail_servers import Google, connect_oauth, google_mailboxes, oauth_mailbox
from tests.sending.helpers import launched_campaign, received_by, rows
from tests.served import served
from workers import sender

API = "/api/v1"


@pytest.fixture
async def google(runtime: Runtime, mail_ca: MailCA) -> AsyncIterator[Google]:
    async with google_mailboxes(runtime, mail_ca) as configured:
        yield configured


async def test_connecting_a_google_mailbox_end_to_end(google: Google, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    page, callback = await connect_oauth(google, ws, "ann@gmail.test")
    assert page.status_code == 200 and "Mailbox connected" in page.text, page.text
    assert page.headers["content-type"].startswith("text/html")

    asked = google.provider.authorize_requests[-1]
    assert (
        asked["code_challenge_method"] == "S256"
        and asked["redirect_uri"] == f"{google.base}/oauth/mailbox/callback"
    )
    assert "https://mail.google.com/" in asked["scope"] and asked["access_type"] == "offline"
    assert google.provider.grants == ["authorization_code"]
    assert google.smtp.xoauth2_logins == ["ann@gmail.test"]
    assert "user=<ann@gmail.test>, method=XOAUTH2" in google.imap.log()  # Dovecot asked the provider
    assert len(google.provider.introspected) == 1

    box = await oauth_mailbox(google, ws, "ann@gmail.test")
    assert box["provider"] == "google_oauth" and box["status"] == "active"
    assert box["smtp"] == {
        "host": HOST,
        "port": google.smtp.port,
        "security": "tls",
        "user": "ann@gmail.test",
    }
    stored = (await rows(ws, "mailboxes", id=box["id"]))[0]
    assert (
        stored.oauth_encrypted and "rt-" not in stored.oauth_encrypted and "at-" not in stored.oauth_encrypted
    )

    async with httpx.AsyncClient(timeout=30) as client:  # the state is single-use
        again = await client.get(callback)
    assert again.status_code == 404 and "used already" in again.text


async def test_start_is_refused_for_a_provider_not_configured(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, google: Google
) -> None:
    ws = await make_workspace()
    refused = await http.post(
        f"{API}/mailboxes/oauth/start", headers=ws.headers, json={"provider": "microsoft"}
    )
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "oauth_provider_not_configured"
    assert (await http.get(f"{API}/mailboxes", headers=ws.headers)).json()["microsoftEnabled"] is False
    bad = await http.post(f"{API}/mailboxes/oauth/start", headers=ws.headers, json={"provider": "smtp"})
    assert bad.status_code == 422
    microsoft = {"microsoft_client_id": "ms", "microsoft_client_secret": "ms-secret"}
    async with served(google.runtime, **microsoft) as base, httpx.AsyncClient(base_url=base) as client:
        listed = (await client.get(f"{API}/mailboxes", headers=ws.headers)).json()
        body = {"provider": "microsoft"}
        started = await client.post(f"{API}/mailboxes/oauth/start", headers=ws.headers, json=body)
    assert listed["microsoftEnabled"] is True
    assert started.status_code == 200
    url = urlsplit(started.json()["url"])
    assert url.netloc == "login.microsoftonline.com" and url.path == "/common/oauth2/v2.0/authorize"
    query = parse_qs(url.query)
    assert "https://outlook.office.com/SMTP.Send" in query["scope"][0] and query["code_challenge_method"] == [
        "S256"
    ]


async def test_callback_refuses_forged_or_foreign_states(
    google: Google, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    async with httpx.AsyncClient(base_url=google.base, timeout=30) as client:
        forged = await client.get(
            "/oauth/mailbox/callback", params={"code": "x", "state": f"{ws.workspace_id}.nope"}
        )
        malformed = await client.get("/oauth/mailbox/callback", params={"code": "x", "state": "nope"})
        started = await client.post(
            f"{API}/mailboxes/oauth/start", headers=ws.headers, json={"provider": "google_oauth"}
        )
        state = parse_qs(urlsplit(started.json()["url"]).query)["state"][0]
        other = await make_workspace()
        moved = state.replace(ws.workspace_id, other.workspace_id)  # the state names another workspace
        foreign = await client.get("/oauth/mailbox/callback", params={"code": "x", "state": moved})
        denied = await client.get(
            "/oauth/mailbox/callback", params={"error": "access_denied", "state": state}
        )
    assert forged.status_code == 404 and malformed.status_code == 400 and foreign.status_code == 404
    assert denied.status_code == 400 and "access_denied" in denied.text
    assert google.provider.grants == []


async def test_refresh_before_expiry_then_revoked_grant_then_transient_failure(
    google: Google, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    google.provider.access_ttl_s = 60  # under the 5 minutes ahead: every login refreshes first
    ws = await make_workspace()
    page, _ = await connect_oauth(google, ws, "bea@gmail.test")
    assert "Mailbox connected" in page.text, page.text
    box = await oauth_mailbox(google, ws, "bea@gmail.test")

    async with httpx.AsyncClient(base_url=google.base, timeout=30) as client:
        retest = await client.post(f"{API}/mailboxes/{box['id']}/test", headers=ws.headers)
    assert retest.json() == {"ok": True, "error": None}
    assert google.provider.grants == ["authorization_code", "refresh_token"]  # the old token ended: refreshed

    # the sender's hand-off logs in with a refreshed token: the SMTP server sees XOAUTH2 and the email
    lead = (await http.post(f"{API}/leads", headers=ws.headers, json={"email": "lead-1@example.org"})).json()
    await launched_campaign(http, ws, [box["id"]], [lead["id"]])
    await sender.tick(google.runtime)
    assert received_by(google.smtp, "lead-1@example.org")
    assert google.provider.grants.count("refresh_token") == 2

    # a passing failure of the token endpoint: retried later, the mailbox stays active
    google.provider.refresh_answer = "503"
    lead2 = (await http.post(f"{API}/leads", headers=ws.headers, json={"email": "lead-2@example.org"})).json()
    await launched_campaign(http, ws, [box["id"]], [lead2["id"]])
    await rows_update_next_send(ws, box["id"])
    await sender.tick(google.runtime)
    assert (await oauth_mailbox(google, ws, "bea@gmail.test"))["status"] == "active"
    assert not received_by(google.smtp, "lead-2@example.org") and google.provider.refused == ["503"]
    [waiting] = [r for r in await rows(ws, "sends") if r.lead_id == lead2["id"]]
    assert "tried again later" in (waiting.error or ""), waiting
    async with httpx.AsyncClient(base_url=google.base, timeout=30) as client:
        outage = await client.post(f"{API}/mailboxes/{box['id']}/test", headers=ws.headers)
    assert outage.status_code == 409 and outage.json()["error"]["code"] == "oauth_unavailable"
    assert (await oauth_mailbox(google, ws, "bea@gmail.test"))["status"] == "active"

    # the grant revoked: the mailbox is in error and says to reconnect
    google.provider.refresh_answer = "invalid_grant"
    lead3 = (await http.post(f"{API}/leads", headers=ws.headers, json={"email": "lead-3@example.org"})).json()
    await launched_campaign(http, ws, [box["id"]], [lead3["id"]])
    await rows_update_next_send(ws, box["id"])
    await sender.tick(google.runtime)
    after = await oauth_mailbox(google, ws, "bea@gmail.test")
    assert after["status"] == "error" and "reconnect" in after["statusReason"], after

    # connecting it again gives it the new grant and makes it active
    google.provider.refresh_answer = "ok"
    page, _ = await connect_oauth(google, ws, "bea@gmail.test")
    assert "Mailbox connected" in page.text, page.text
    again = await oauth_mailbox(google, ws, "bea@gmail.test")
    assert again["id"] == box["id"] and again["status"] == "active"


async def rows_update_next_send(ws: WorkspaceHandle, mailbox_id: str) -> None:
    """Let the mailbox send again at once (its gap after the last attempt)."""
    from tests.sending.helpers import update_rows

    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=mailbox_id)


async def test_the_inbox_worker_reads_an_oauth_mailbox_with_a_refreshed_token(
    google: Google, make_workspace: MakeWorkspace
) -> None:
    """The inbox worker's IMAP session logs in to Dovecot with AUTHENTICATE XOAUTH2 and a token refreshed
    first (the connection's token lives 60 s, under the 5 minutes ahead)."""
    from tests.inbox_worker.conftest import inbox_runtime
    from tests.inbox_worker.helpers import Recorder, Workers, until

    google.provider.access_ttl_s = 60
    ws = await make_workspace()
    page, _ = await connect_oauth(google, ws, "cat@gmail.test")
    assert "Mailbox connected" in page.text, page.text
    box = await oauth_mailbox(google, ws, "cat@gmail.test")
    changes = {k: v for k, v in google.runtime.settings.model_dump().items() if "oauth" in k or "google" in k}
    rt = inbox_runtime(google.runtime, **changes)
    workers, recorder = Workers(), Recorder()
    try:
        workers.start(rt, recorder, [ws.workspace_id], holder="oauth-inbox")
        await until(lambda: recorder.batches, what="the first sync of the OAuth mailbox")
    finally:
        await workers.stop_all()
    assert google.provider.grants == ["authorization_code", "refresh_token"]
    assert google.imap.log().count("user=<cat@gmail.test>, method=XOAUTH2") == 2  # the test, then the worker
    after = await oauth_mailbox(google, ws, "cat@gmail.test")
    assert after["id"] == box["id"] and after["status"] == "active"


async def test_a_sign_in_finished_after_the_person_left_saves_nothing(
    google: Google, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    member = await owner.add_member("member")
    google.provider.next_email = "dan@gmail.test"
    async with httpx.AsyncClient(base_url=google.base, timeout=30, follow_redirects=False) as client:
        started = await client.post(
            f"{API}/mailboxes/oauth/start", headers=member.headers, json={"provider": "google_oauth"}
        )
        authorize = await client.get(started.json()["url"])
        people = (await client.get(f"{API}/members", headers=owner.headers)).json()
        [mid] = [m["id"] for m in people["members"] if m["userId"] == member.user_id]
        removed = await client.delete(f"{API}/members/{mid}", headers=owner.headers)
        assert removed.status_code == 200, removed.text
        page = await client.get(authorize.headers["location"])
        listed = (await client.get(f"{API}/mailboxes", headers=owner.headers)).json()
    assert page.status_code == 404 and google.provider.grants == []
    assert all(m["email"] != "dan@gmail.test" for m in listed["mailboxes"])


async def test_a_rotated_refresh_token_is_written_back(google: Google, make_workspace: MakeWorkspace) -> None:
    """Microsoft answers a refresh with a new refresh token: the `usage` worker stores it, so a restarted
    process (nothing in memory) still logs in after the provider ended the old one."""
    from outreach_core.mailboxes import oauth_tokens
    from workers import usage_flush

    google.provider.access_ttl_s = 60
    ws = await make_workspace()
    page, _ = await connect_oauth(google, ws, "eve@gmail.test")
    assert "Mailbox connected" in page.text, page.text
    box = await oauth_mailbox(google, ws, "eve@gmail.test")
    before = (await rows(ws, "mailboxes", id=box["id"]))[0].oauth_encrypted
    google.provider.rotate_refresh = True
    async with httpx.AsyncClient(base_url=google.base, timeout=30) as client:
        first = await client.post(f"{API}/mailboxes/{box['id']}/test", headers=ws.headers)
        assert first.json() == {"ok": True, "error": None}
        assert await usage_flush.tick(google.runtime) >= 1
        after = (await rows(ws, "mailboxes", id=box["id"]))[0].oauth_encrypted
        settings = google.runtime.settings
        old, new = oauth_tokens.open_tokens(settings, before), oauth_tokens.open_tokens(settings, after)
        assert new.refresh_token != old.refresh_token
        oauth_tokens._fresh.clear()  # a restart: nothing refreshed in memory
        again = await client.post(f"{API}/mailboxes/{box['id']}/test", headers=ws.headers)
    assert again.json() == {"ok": True, "error": None}
    assert google.provider.refused == []
