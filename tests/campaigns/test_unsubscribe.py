"""The one-click unsubscribe link over real HTTP: RFC 8058 POST, the confirm page, forged tokens, key
rotation."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx
import pytest

from outreach_app.asgi import build_app
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.signing import InvalidSignature
from outreach_core.mail.links import read_unsubscribe_token, unsubscribe_url
from tests.campaigns.helpers import add_lead, campaign_lead_rows, new_campaign, ok
from tests.campaigns.test_lifecycle import events
from tests.conftest import MakeWorkspace, serving
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import launched_campaign, parse, smtp_mailbox
from workers import sender


async def test_one_click_unsubscribes_suppresses_and_stops_every_campaign(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(name="Acme Outreach")
    lead = await add_lead(ws, "Reader@Example.test")
    other = await add_lead(ws, "stays@example.test")
    first, second = await new_campaign(http, ws), await new_campaign(http, ws)
    for cid in (first, second):
        await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [lead, other]})
    link = unsubscribe_url(ws.runtime.settings, workspace_id=ws.workspace_id, lead_id=lead, campaign_id=first)
    path = urlsplit(link).path

    page = await http.get(path)
    assert page.status_code == 200 and "reader@example.test" in page.text and "Acme Outreach" in page.text
    assert (
        '<form method="post">' in page.text
        and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    )
    assert (await ok(http, ws, "GET", f"/leads/{lead}"))["status"] == "active"  # a GET changes nothing

    done = await http.post(path, content=b"List-Unsubscribe=One-Click",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert done.status_code == 200 and "set-cookie" not in done.headers and "location" not in done.headers
    assert "reader@example.test will get no more emails" in done.text
    assert (await ok(http, ws, "GET", f"/leads/{lead}"))["status"] == "unsubscribed"
    listed = await ok(http, ws, "GET", "/suppressions", params={"search": "reader"})
    assert [(s["value"], s["reason"]) for s in listed["suppressions"]] == [
        ("reader@example.test", "unsubscribed")
    ]
    for cid in (first, second):
        statuses = {r.lead_id: r.status for r in await campaign_lead_rows(ws, cid)}
        assert statuses == {lead: "unsubscribed", other: "not_contacted"}
    [event] = [e["data"] for e in await events(ws, "lead.unsubscribed")]
    assert event["lead"]["id"] == lead and event["lead"]["email"] == "reader@example.test"
    assert event["lead"]["status"] == "unsubscribed" and event["campaign"]["id"] == first
    assert event["source"] == "link" and event["thread"] is None

    again = await http.post(path)
    assert again.status_code == 200 and len(await events(ws, "lead.unsubscribed")) == 1
    assert "already unsubscribed" in (await http.get(path)).text


async def test_forged_or_altered_tokens_reveal_nothing(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    lead = await add_lead(ws, "target@example.test")
    link = unsubscribe_url(ws.runtime.settings, workspace_id=ws.workspace_id, lead_id=lead, campaign_id=None)
    token = urlsplit(link).path.removeprefix("/u/")
    body, mac = token.split(".")
    other = {"A": "B"}  # a character that differs from the one it replaces, whatever that one is
    forged = [
        f"{body}.{mac[:-1]}{other.get(mac[-1], 'A')}",  # the MAC's last character: a look-alike spelling
        f"{body}.{other.get(mac[0], 'A')}{mac[1:]}",
        "nothing",
        f"{body[:-1]}{other.get(body[-1], 'A')}.{mac}",
        "",
    ]
    for bad in forged:
        for method in ("GET", "POST"):
            response = await http.request(method, f"/u/{bad}")
            assert response.status_code == 404, (bad, method)
            assert "target" not in response.text
    assert (await ok(http, ws, "GET", f"/leads/{lead}"))["status"] == "active"
    # a valid token for a lead that was deleted since
    await ok(http, ws, "POST", "/leads/delete", {"target": {"ids": [lead]}})
    assert (await http.post(urlsplit(link).path)).status_code == 404


async def test_links_in_emails_sent_before_a_key_rotation_keep_working(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """An email goes out under key A; the server is restarted with key B and A in
    OUTREACH_SECRET_KEY_PREVIOUS: the link in that email (read from the bytes the SMTP server received) still
    unsubscribes. Restarted with B alone, the same link is refused."""
    ws = await make_workspace()
    server = smtp_servers["starttls"]
    box = await smtp_mailbox(ws, server, mail_users)
    lead = await add_lead(ws, "rotated@example.test")
    await launched_campaign(http, ws, [box], [lead])
    assert await sender.tick(ws.runtime) >= 1
    [received] = [m for m in server.messages if "rotated@example.test" in m.rcpt_tos]
    link = parse(received.data)["List-Unsubscribe"].strip("<>")
    path = urlsplit(link).path
    key_a = ws.runtime.settings.resolved_secret_key()

    async def post_to(secret_key: str, previous: str | None) -> httpx.Response:
        rotated = ws.runtime.settings.model_copy(
            update={"secret_key": secret_key, "secret_key_previous": previous}
        )
        app = build_app(Runtime(rotated, engine=ws.runtime.engine), flush_usage=False)
        async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
            return await client.post(
                path,
                content=b"List-Unsubscribe=One-Click",
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )

    refused = await post_to("key-b-after-rotation", None)
    assert refused.status_code == 404 and "rotated@example.test" not in refused.text
    assert (await ok(http, ws, "GET", f"/leads/{lead}"))["status"] == "active"

    done = await post_to("key-b-after-rotation", f"key-c-older, {key_a}")
    assert done.status_code == 200 and "rotated@example.test will get no more emails" in done.text
    assert (await ok(http, ws, "GET", f"/leads/{lead}"))["status"] == "unsubscribed"


def test_new_links_are_signed_with_the_current_key(settings: Settings) -> None:
    rotated = settings.model_copy(update={"secret_key": "key-b", "secret_key_previous": "key-a"})
    link = unsubscribe_url(rotated, workspace_id="ws_1", lead_id="lead_1", campaign_id=None)
    token = urlsplit(link).path.removeprefix("/u/")
    now = datetime.now(UTC)
    only_b = settings.model_copy(update={"secret_key": "key-b", "secret_key_previous": None})
    assert read_unsubscribe_token(only_b, token, now) == {"w": "ws_1", "l": "lead_1", "c": None}
    only_a = settings.model_copy(update={"secret_key": "key-a", "secret_key_previous": None})
    with pytest.raises(InvalidSignature):
        read_unsubscribe_token(only_a, token, now)
