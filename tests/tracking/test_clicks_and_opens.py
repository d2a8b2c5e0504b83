"""Click and open tracking as people and scanners meet it: the links read out of the raw email the SMTP
server received, followed by a real HTTP client (httpx) against the served app; the counts read back
through REST and MCP (docs/tracking.md)."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape
from typing import Any

import httpx

from http_api.tracking import PIXEL
from outreach_core.tracking.tokens import click_url
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.doors import call_mcp, call_rest
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import (
    add_lead,
    launched_campaign,
    received_by,
    rows,
    smtp_mailbox,
    update_rows,
)
from workers import sender

BROWSER = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Safari/605.1.15"
)
PRICING = "https://example.com/pricing?plan=team&utm=mail"
GUIDE = "https://docs.example.org/guide"
BODY = (
    '<p>Hi {{first_name|there}}, our <a href="https://example.com/pricing?plan=team&amp;utm=mail">pricing</a>'
    ' and <a href="https://docs.example.org/guide">the guide</a>. Write to '
    '<a href="mailto:sam@mail.test">Sam</a>.</p><p>{{unsubscribe}}</p>'
)
TRACKED = re.compile(r"https?://[^\s\"<>()]+/[lo]/[A-Za-z0-9_.-]+")


async def tracked_email(
    http: httpx.AsyncClient,
    ws: WorkspaceHandle,
    server: SmtpServer,
    users: Users,
    address: str,
    *,
    clicks: bool = True,
    opens: bool = True,
) -> tuple[str, Any, str, str]:
    """A launched campaign with tracking, its first email sent: (campaign id, the message as received,
    its HTML part, its text part)."""
    box = await smtp_mailbox(ws, server, users)
    lead = await add_lead(ws, address)
    steps = [{"variants": [{"subject": "Pricing", "body": BODY}]}]
    cid = await launched_campaign(http, ws, [box], [lead], steps=steps, trackClicks=clicks, trackOpens=opens)
    await sender.tick(ws.runtime)
    [message] = received_by(server, address)
    html_part, text_part = message.get_body(("html",)), message.get_body(("plain",))
    assert html_part is not None and text_part is not None
    return cid, message, html_part.get_content(), text_part.get_content()


def hrefs(markup: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"]*)"', markup)]


async def read_later(ws: WorkspaceHandle, cid: str) -> None:
    """The email was delivered an hour ago (a person reads it later than a scanner would)."""
    [send] = await rows(ws, "sends", campaign_id=cid)
    await update_rows(ws, "sends", {"sent_at": send.sent_at - dt.timedelta(hours=1)}, id=send.id)


async def committed(app: Any) -> None:
    assert await app.state.tracking.drain()


async def sends_of(http: httpx.AsyncClient, ws: WorkspaceHandle, cid: str) -> tuple[dict[str, Any], Any]:
    listed = await http.get(f"/api/v1/campaigns/{cid}/leads", headers=ws.headers)
    assert listed.status_code == 200, listed.text
    [lead] = listed.json()["leads"]
    sent = await http.get(f"/api/v1/campaigns/{cid}/leads/{lead['id']}/sends", headers=ws.headers)
    assert sent.status_code == 200, sent.text
    [send] = sent.json()["sends"]
    return lead, send


async def test_links_and_pixel_in_the_email_count_a_persons_click_and_open(
    http: httpx.AsyncClient,
    app: Any,
    live_server: str,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
    mcp_session: Any,
) -> None:
    ws = await make_workspace()
    cid, message, markup, text = await tracked_email(
        http, ws, smtp_servers["starttls"], mail_users, "reader@people.example"
    )
    # every web link of both parts goes through the server's own address (no link domain yet) ...
    links = [h for h in hrefs(markup) if h.startswith("http")]
    unsubscribe = message["List-Unsubscribe"].strip("<>")
    assert unsubscribe.startswith(f"{live_server}/u/")
    assert unsubscribe in links  # ... but the unsubscribe link, which stays as it is
    clicks = [h for h in links if h != unsubscribe]
    assert len(clicks) == 2 and all(h.startswith(f"{live_server}/l/") for h in clicks)
    assert "mailto:sam@mail.test" in hrefs(markup)
    assert PRICING not in markup and GUIDE not in markup and PRICING not in text and GUIDE not in text
    [pixel] = re.findall(r'<img src="([^"]+)" width="1" height="1"', markup)
    assert unescape(pixel).startswith(f"{live_server}/o/")
    text_links = [u for u in TRACKED.findall(text) if "/l/" in u]
    assert sorted(text_links) == sorted(clicks) and unsubscribe in text

    await read_later(ws, cid)
    async with httpx.AsyncClient(headers={"User-Agent": BROWSER}, timeout=10) as person:
        pricing = await person.get(clicks[0])
        assert pricing.status_code == 302 and pricing.headers["location"] == PRICING
        assert "no-store" in pricing.headers["cache-control"]
        guide = await person.get(clicks[1])
        assert guide.status_code == 302 and guide.headers["location"] == GUIDE
        image = await person.get(unescape(pixel))
        assert image.status_code == 200 and image.headers["content-type"] == "image/gif"
        assert image.content == PIXEL and "no-store" in image.headers["cache-control"]
        await person.get(unescape(pixel))  # opened again
    await committed(app)

    lead, send = await sends_of(http, ws, cid)
    assert (send["openCount"], send["clickCount"], send["flaggedOpens"], send["flaggedClicks"]) == (
        2,
        2,
        0,
        0,
    )
    assert send["openedAt"] and send["clickedAt"] and send["openedAt"] >= send["sentAt"]
    assert clicks[0] in send["body"] and unescape(pixel) in unescape(send["body"])  # stored as sent
    assert {k: lead[k] for k in ("openCount", "clickCount", "openedAt", "clickedAt")} == {
        k: send[k] for k in ("openCount", "clickCount", "openedAt", "clickedAt")
    }
    # MCP shows the same
    async with mcp_session(ws.api_key) as client:
        is_error, listed = await call_mcp(client, "list_campaign_leads", {"id": cid})
        assert not is_error and listed["leads"][0]["openCount"] == 2
        is_error, sent = await call_mcp(
            client, "list_campaign_lead_sends", {"id": cid, "campaignLeadId": lead["id"]}
        )
        assert not is_error and sent["sends"][0] == send


async def test_scanners_and_prefetchers_are_flagged_not_counted(
    http: httpx.AsyncClient,
    app: Any,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    cid, _, markup, _ = await tracked_email(http, ws, smtp_servers["tls"], mail_users, "gateway@corp.example")
    click = next(h for h in hrefs(markup) if "/l/" in h)
    pixel = unescape(re.findall(r'<img src="([^"]+)"', markup)[0])
    async with httpx.AsyncClient(headers={"User-Agent": BROWSER}, timeout=10) as gateway:
        # a click on arrival, with a browser's user agent: Safe Links and friends follow every link at once
        assert (await gateway.get(click)).status_code == 302
    await committed(app)  # recorded against the real hand-off time, before the test moves it back
    await read_later(ws, cid)
    async with httpx.AsyncClient(timeout=10) as client:
        # HEAD requests: link checkers
        assert (await client.head(click, headers={"User-Agent": BROWSER})).status_code == 302
        assert (await client.head(pixel, headers={"User-Agent": BROWSER})).status_code == 200
        # scanners and libraries by their user agent, and none at all
        for agent in ("Mozilla/5.0 (compatible; Barracuda Sentinel)", "python-requests/2.32", ""):
            assert (await client.get(click, headers={"User-Agent": agent})).status_code == 302
        # Apple Mail Privacy Protection's proxy loads images with a bare user agent
        assert (await client.get(pixel, headers={"User-Agent": "Mozilla/5.0"})).status_code == 200
    await committed(app)
    lead, send = await sends_of(http, ws, cid)
    assert (send["openCount"], send["clickCount"]) == (0, 0)
    assert send["openedAt"] is None and send["clickedAt"] is None
    assert (send["flaggedOpens"], send["flaggedClicks"]) == (2, 5)
    assert (lead["flaggedOpens"], lead["flaggedClicks"], lead["openCount"]) == (2, 5, 0)


async def test_forged_altered_and_truncated_tokens_are_404_never_a_redirect(
    http: httpx.AsyncClient,
    app: Any,
    live_server: str,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    cid, _, markup, _ = await tracked_email(http, ws, smtp_servers["tls"], mail_users, "forger@evil.example")
    click = next(h for h in hrefs(markup) if "/l/" in h)
    pixel = unescape(re.findall(r'<img src="([^"]+)"', markup)[0])
    token = click.rsplit("/", 1)[1]
    body, mac = token.split(".")
    [send] = await rows(ws, "sends", campaign_id=cid)
    flipped = mac[:-2] + ("A" if mac[-2] != "A" else "B") + mac[-1]
    forged = [
        f"{live_server}/l/{body}.{flipped}",  # altered signature
        f"{live_server}/l/{token[:-5]}",  # truncated
        f"{live_server}/l/{body}",  # no signature
        f"{live_server}/l/x{token}",
        f"{live_server}/l/{pixel.rsplit('/', 1)[1]}",  # an open token is not a click token
        click_url("another-servers-key", live_server, send.id, "https://evil.example/"),  # not our key
        f"{live_server}/o/{token}",  # a click token is not an open token
        f"{live_server}/o/{token[:-1]}",
    ]
    async with httpx.AsyncClient(headers={"User-Agent": BROWSER}, timeout=10) as client:
        for url in forged:
            for method in ("GET", "HEAD"):
                answer = await client.request(method, url)
                assert answer.status_code == 404, (method, url)
                assert "location" not in answer.headers
        assert (await client.post(click)).status_code == 405  # only GET and HEAD
    await committed(app)
    [send] = await rows(ws, "sends", campaign_id=cid)
    assert (send.open_count, send.click_count, send.flagged_opens, send.flagged_clicks) == (0, 0, 0, 0)


async def test_without_tracking_links_stay_as_written(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    _, _, markup, text = await tracked_email(
        http, ws, smtp_servers["tls"], mail_users, "plain@people.example", clicks=False, opens=False
    )
    assert PRICING in hrefs(markup) and GUIDE in hrefs(markup) and "<img" not in markup
    assert PRICING in text and "/l/" not in markup and "/o/" not in markup


async def test_opens_only_keep_links_and_add_the_pixel(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    _, _, markup, text = await tracked_email(
        http, ws, smtp_servers["tls"], mail_users, "opens@people.example", clicks=False, opens=True
    )
    assert PRICING in hrefs(markup) and PRICING in text and "/l/" not in markup
    assert len(re.findall(r'<img src="[^"]+/o/[^"]+"', markup)) == 1


async def test_preview_shows_the_tracked_links_which_record_nothing(
    http: httpx.AsyncClient,
    app: Any,
    live_server: str,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, smtp_servers["tls"], mail_users)
    lead = await add_lead(ws, "preview@people.example")
    steps = [{"variants": [{"subject": "Pricing", "body": BODY}]}]
    cid = await launched_campaign(
        http, ws, [box], [lead], steps=steps, launch=False, trackClicks=True, trackOpens=True
    )
    preview = await http.get(f"/api/v1/campaigns/{cid}/preview", headers=ws.headers)
    assert preview.status_code == 200, preview.text
    [email] = preview.json()["emails"]
    links = [h for h in hrefs(email["body"]) if "/l/" in h]
    assert len(links) == 2 and PRICING not in email["body"] and "/o/" in email["body"]
    assert sorted(u for u in TRACKED.findall(email["text"]) if "/l/" in u) == sorted(links)
    assert preview.json()["unsubscribe"] in hrefs(email["body"])  # untracked
    async with httpx.AsyncClient(headers={"User-Agent": BROWSER}, timeout=10) as person:
        answer = await person.get(links[0])
    assert answer.status_code == 302 and answer.headers["location"] == PRICING
    await committed(app)
    assert await rows(ws, "sends", campaign_id=cid) == []  # nothing sent, nothing recorded


async def test_checklist_warns_that_tracked_links_use_the_servers_own_address(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, smtp_servers["tls"], mail_users)
    lead = await add_lead(ws, "checklist@people.example")
    cid = await launched_campaign(http, ws, [box], [lead], launch=False, trackClicks=True)
    answer = await call_rest(http, ws.headers, "get_launch_checklist", {"id": cid})
    assert answer[0] == 200
    [item] = [i for i in answer[1]["items"] if i["id"] == "tracking_link_domain"]
    assert item["ok"] is False and item["required"] is False and "own address" in item["message"]


async def test_with_an_active_link_domain_every_link_goes_through_it(
    http: httpx.AsyncClient,
    app: Any,
    live_server: str,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """Once the workspace's link domain is active, tracked links, the pixel and the unsubscribe link of its
    emails use it (`https://<link domain>`), and the link domain's host serves them: a request with that
    Host header is redirected, while the API answers 404 there."""
    from outreach_core.kernel.context import WorkspaceContext, scoped
    from outreach_core.kernel.db.tables import link_domains

    ws = await make_workspace()
    host = f"links.ws{ws.workspace_id[-8:].lower()}.example.com"

    async def activate(ctx: WorkspaceContext) -> None:
        values = {"hostname": host, "status": "active", "dns": "ok", "tls": "active", "since": ctx.now,
                  "created_at": ctx.now, "verified_at": ctx.now}  # fmt: skip
        await ctx.conn.execute(scoped(ctx, link_domains).insert(values))

    await ws.runtime.execute(await ws.principal(), activate)
    cid, message, markup, _text = await tracked_email(
        http, ws, smtp_servers["starttls"], mail_users, "linked@people.example"
    )
    links = [h for h in hrefs(markup) if h.startswith("http")]
    assert links and all(h.startswith(f"https://{host}/") for h in links), links
    assert message["List-Unsubscribe"].strip("<>").startswith(f"https://{host}/u/")
    click = next(h for h in links if "/l/" in h)
    await read_later(ws, cid)
    path = click.removeprefix(f"https://{host}")
    async with httpx.AsyncClient(base_url=live_server, headers={"Host": host, "User-Agent": BROWSER}) as c:
        followed = await c.get(path)
        assert followed.status_code == 302 and followed.headers["location"] in (PRICING, GUIDE)
        assert (await c.get("/api/v1/me", headers=ws.headers)).status_code == 404  # only links there
    await committed(app)
    _lead, send = await sends_of(http, ws, cid)
    assert send["clickCount"] == 1


async def test_a_persons_first_open_counts_in_analytics_once(
    http: httpx.AsyncClient,
    app: Any,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """Opens reach the analytics rollups in the transaction that records them: an email opened twice by a
    person is one open; a flagged open is none; the rebuild counts the same from the ledger."""
    from outreach_core.analytics.rebuild import rebuild

    ws = await make_workspace()
    before = (await http.get("/api/v1/analytics/overview", headers=ws.headers, params={"days": 7})).json()
    assert before["tracksOpens"] is False and before["totals"]["opened"] == 0
    cid, _, markup, _ = await tracked_email(
        http, ws, smtp_servers["starttls"], mail_users, "opens@people.example"
    )
    pixel = unescape(re.findall(r'<img src="([^"]+)"', markup)[0])
    await read_later(ws, cid)
    async with httpx.AsyncClient(timeout=10) as client:
        assert (
            await client.get(pixel, headers={"User-Agent": "Mozilla/5.0"})
        ).status_code == 200  # Apple proxy
        await committed(app)
        for _ in range(2):
            assert (await client.get(pixel, headers={"User-Agent": BROWSER})).status_code == 200
            await committed(app)
    overview = (await http.get("/api/v1/analytics/overview", headers=ws.headers, params={"days": 7})).json()
    assert overview["tracksOpens"] is True and overview["totals"]["opened"] == 1
    stats = (await http.get("/api/v1/campaigns/stats", headers=ws.headers, params={"campaignId": cid})).json()
    assert stats["tracksOpens"] is True and stats["totals"]["opened"] == 1
    await ws.runtime.system(rebuild, ws.workspace_id)
    again = (await http.get("/api/v1/analytics/overview", headers=ws.headers, params={"days": 7})).json()
    assert again["totals"] == overview["totals"]
