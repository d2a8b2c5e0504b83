"""The rollups as the real sender keeps them: emails handed to aiosmtpd (one accepted, one refused with
550) show in the overview, the campaign stats and the breakdown, as the server saw them."""

from __future__ import annotations

import httpx

from tests.conftest import MakeWorkspace
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, received_by, smtp_mailbox, update_rows
from workers import sender

API = "/api/v1"


async def test_sender_hand_offs_are_counted(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    server = smtp_servers["starttls"]
    server.rcpt_reply = {"gone@refused.example": "550 5.1.1 No such user here"}.get
    try:
        ws = await make_workspace()
        box = await smtp_mailbox(ws, server, mail_users)
        leads = [await add_lead(ws, "ada@counted.example"), await add_lead(ws, "gone@refused.example")]
        cid = await launched_campaign(http, ws, [box], leads)
        for _ in range(2):  # one email per tick from the mailbox (its gap), made due again
            await sender.tick(ws.runtime)
            await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
    finally:
        server.rcpt_reply = None
    assert len(received_by(server, "ada@counted.example")) == 1

    overview = (await http.get(f"{API}/analytics/overview", params={"days": 7}, headers=ws.headers)).json()
    assert overview["sending"] is True
    assert (overview["totals"]["sent"], overview["totals"]["bounced"]) == (2, 1)
    assert sum(d["sent"] for d in overview["series"]) == 2
    stats = (await http.get(f"{API}/campaigns/stats", params={"campaignId": cid}, headers=ws.headers)).json()
    assert (stats["totals"]["sent"], stats["totals"]["bounced"]) == (2, 1)
    breakdown = (await http.get(f"{API}/campaigns/{cid}/breakdown", headers=ws.headers)).json()
    first = breakdown["steps"][0]
    assert [(v["sent"], v["bounced"]) for v in first["variants"]] == [(2, 1)]
    assert first["winner"] is None and "single variant" in first["reason"]
    assert [(m["mailboxId"], m["sent"]) for m in breakdown["byMailbox"]] == [(box, 2)]
