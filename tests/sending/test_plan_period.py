"""The plan's monthly emails: `/me` reports what the sender counts against them; the sender stops there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from outreach_core.kernel.bulk import insert_rows
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.db.tables import sends
from outreach_core.kernel.ids import new_id
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, received_by, smtp_mailbox, update_rows
from workers import sender


async def _ledger(ws: WorkspaceHandle, campaign_id: str, lead_id: str, rows: list[dict[str, Any]]) -> None:
    """Ledger rows as the sender writes them (one statement)."""

    async def insert(ctx: WorkspaceContext) -> None:
        full = []
        for r in rows:
            send_id = new_id("snd")
            full.append(
                {
                    "id": send_id,
                    "campaign_id": campaign_id,
                    "campaign_lead_id": None,
                    "lead_id": lead_id,
                    "step": 0,
                    "message_id": f"<{send_id}@mail.test>",
                    "to_email": "earlier@example.test",
                    "subject": "Earlier",
                    "body_html": "<p>Earlier</p>",
                    "body_text": "Earlier",
                    "attempts": 1,
                    **r,
                }
            )
        await insert_rows(ctx, sends, full)

    await ws.runtime.execute(await ws.principal(), insert)


async def test_me_counts_this_periods_emails_as_the_sender_does(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace(plan="starter")  # 6,000 emails a month, the period starting now
    server = smtp_servers["starttls"]
    boxes = [await smtp_mailbox(ws, server, mail_users) for _ in range(2)]
    people = [f"plan-{i}-{ws.slug}@example.test" for i in range(2)]
    lead_ids = [await add_lead(ws, email) for email in people]
    cid = await launched_campaign(http, ws, boxes, lead_ids)

    async def sent_this_period() -> int:
        me = await http.get("/api/v1/me", headers=ws.headers)
        return int(me.json()["billing"]["emailsSentThisPeriod"])

    assert await sent_this_period() == 0
    now = datetime.now(UTC)
    accepted = {"status": "sent", "created_at": now, "sent_at": now, "error": None}
    await _ledger(
        ws,
        cid,
        lead_ids[0],
        [accepted] * 5_996
        + [
            {"status": "bounced", "created_at": now, "sent_at": now, "error": "5.1.1 no such user"},
            {"status": "unknown", "created_at": now, "sent_at": None, "error": None},  # may have left
            {"status": "sending", "created_at": now, "sent_at": None, "error": None},  # in flight
            # not counted: refused, waiting for a retry, or sent in the previous period
            {"status": "failed", "created_at": now, "sent_at": None, "error": "550 refused"},
            {"status": "retry", "created_at": now, "sent_at": None, "error": "451 later"},
            {**accepted, "created_at": now - timedelta(days=40), "sent_at": now - timedelta(days=40)},
        ],
    )
    assert await sent_this_period() == 5_999

    # one email is left in the plan: two mailboxes are free and two leads wait, and exactly one goes out
    assert await sender.tick(ws.runtime) >= 1
    assert sum(len(received_by(server, email)) for email in people) == 1
    assert await sent_this_period() == 6_000
    for box in boxes:
        await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
    await sender.tick(ws.runtime)
    assert sum(len(received_by(server, email)) for email in people) == 1
    assert await sent_this_period() == 6_000
