"""The one-click unsubscribe link over real HTTP: RFC 8058 POST, the confirm page, forged tokens."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from outreach_core.campaigns.links import unsubscribe_url
from tests.campaigns.helpers import add_lead, campaign_lead_rows, new_campaign, ok
from tests.campaigns.test_lifecycle import events
from tests.conftest import MakeWorkspace


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
    assert [e["data"] for e in await events(ws, "lead.unsubscribed")] == [
        {"leadId": lead, "email": "reader@example.test", "campaignId": first}
    ]

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
