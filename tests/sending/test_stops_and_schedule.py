"""Stop rules, windows, dailyCap, endOn and the even spread, through the worker against aiosmtpd."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import suppressions
from outreach_core.kernel.ids import new_id
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import add_lead, launched_campaign, received_by, rows, smtp_mailbox, update_rows
from workers import sender


async def _suppress(ws: WorkspaceHandle, kind: str, value: str) -> None:
    async def insert(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            scoped(ctx, suppressions).insert(
                {"id": new_id("sup"), "kind": kind, "value": value, "created_at": datetime.now(UTC)}
            )
        )

    await ws.runtime.execute(await ws.principal(), insert)


async def test_stop_rules_leave_leads_out_with_their_final_status(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["starttls"]
    boxes = [await smtp_mailbox(ws, server, mail_users) for _ in range(8)]
    ok_lead = await add_lead(ws, "fine@stops.example")
    risky = await add_lead(ws, "risky@stops.example", verify="catch_all")
    suppressed = await add_lead(ws, "later-suppressed@stops.example")
    domain = await add_lead(ws, "someone@blocked-domain.example")
    unsubscribed = await add_lead(ws, "gone@stops.example")
    replied = await add_lead(ws, "answered@stops.example")
    colleague = await add_lead(ws, "colleague@acme-replied.example")
    replier = await add_lead(ws, "boss@acme-replied.example")
    free_a = await add_lead(ws, "a-person@gmail.com")
    free_b = await add_lead(ws, "another@gmail.com")
    everyone = [ok_lead, risky, suppressed, domain, unsubscribed, replied, colleague, replier, free_a, free_b]
    cid = await launched_campaign(
        http, ws, boxes, everyone, launch=False, skipRisky=False, stopForCompany=True, stopOnReply=True
    )
    await http.patch(f"/api/v1/campaigns/{cid}", headers=ws.headers, json={"skipRisky": True})
    # what happens after the leads were added: suppressions, an unsubscribe, replies
    await _suppress(ws, "email", "later-suppressed@stops.example")
    await _suppress(ws, "domain", "blocked-domain.example")
    await update_rows(ws, "leads", {"status": "unsubscribed"}, id=unsubscribed)
    await update_rows(ws, "leads", {"status": "replied"}, id=replied)
    await update_rows(ws, "campaign_leads", {"status": "replied"}, lead_id=replier)
    await update_rows(ws, "campaign_leads", {"status": "replied"}, lead_id=free_b)
    await http.post(f"/api/v1/campaigns/{cid}/launch", headers=ws.headers)

    await sender.tick(ws.runtime)

    by_lead = {r.lead_id: r for r in await rows(ws, "campaign_leads", campaign_id=cid)}
    assert {k: (by_lead[k].status, by_lead[k].step) for k in by_lead} == {
        ok_lead: ("contacted", 1),
        risky: ("skipped", 0),
        suppressed: ("skipped", 0),
        domain: ("skipped", 0),
        unsubscribed: ("unsubscribed", 0),
        replied: ("stopped", 0),
        colleague: ("stopped", 0),
        replier: ("replied", 0),
        free_a: ("contacted", 1),  # gmail.com is free mail: not one company
        free_b: ("replied", 0),
    }
    assert "same company" in by_lead[colleague].reason and "risky" in by_lead[risky].reason
    sent_to = {m["To"] for m in server_messages(server, ["fine@stops.example", "a-person@gmail.com"])}
    assert sent_to == {"fine@stops.example", "a-person@gmail.com"}
    for address in ("risky", "later-suppressed", "gone", "answered"):
        assert received_by(server, f"{address}@stops.example") == []
    assert received_by(server, "colleague@acme-replied.example") == []


def server_messages(server: SmtpServer, addresses: list[str]) -> list:  # type: ignore[type-arg]
    return [m for a in addresses for m in received_by(server, a)]


async def test_outside_the_window_nothing_goes_and_the_lead_waits_for_its_opening(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["starttls"]
    box = await smtp_mailbox(ws, server, mail_users)
    lead = await add_lead(ws, "sleeping@window.example")
    now = datetime.now(UTC)
    hour = (now.hour + 12) % 24  # a one-hour window half a day away, in UTC
    cid = await launched_campaign(
        http, ws, [box], [lead], windowStart=hour * 60, windowEnd=hour * 60 + 60, timezoneFallback="UTC"
    )
    await sender.tick(ws.runtime)
    assert received_by(server, "sleeping@window.example") == []
    [cl] = await rows(ws, "campaign_leads", campaign_id=cid)
    assert cl.status == "not_contacted" and cl.next_at is not None
    assert cl.next_at.hour == hour and cl.next_at.minute == 0 and cl.next_at > now


async def test_daily_cap_limits_first_emails_and_mailboxes_spread_evenly(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["tls"]
    boxes = [await smtp_mailbox(ws, server, mail_users) for _ in range(4)]
    lead_ids = [await add_lead(ws, f"cap{i}@cap.example") for i in range(12)]
    cid = await launched_campaign(http, ws, boxes, lead_ids, dailyCap=6)
    for _ in range(4):
        for box in boxes:
            await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
        await sender.tick(ws.runtime)
    sent = [s for s in await rows(ws, "sends", campaign_id=cid) if s.status == "sent"]
    assert len(sent) == 6
    per_box = Counter(s.mailbox_id for s in sent)
    assert max(per_box.values()) - min(per_box.get(b, 0) for b in boxes) <= 1


async def test_mailbox_limit_and_gap_hold(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["tls"]
    box = await smtp_mailbox(
        ws,
        server,
        mail_users,
        ramp_enabled=True,
        ramp_start=2,
        ramp_increment=1,
        ramp_started_on=datetime.now(UTC).date().isoformat(),
    )
    lead_ids = [await add_lead(ws, f"limit{i}@limit.example") for i in range(5)]
    cid = await launched_campaign(http, ws, [box], lead_ids)
    await sender.tick(ws.runtime)
    await sender.tick(ws.runtime)  # the gap holds: still one
    assert len(await rows(ws, "sends", campaign_id=cid)) == 1
    for _ in range(3):
        await update_rows(ws, "mailboxes", {"next_send_at": None}, id=box)
        await sender.tick(ws.runtime)
    assert len(await rows(ws, "sends", campaign_id=cid)) == 2  # ramp day 1: effectiveLimit 2
    [mb] = await rows(ws, "mailboxes", id=box)
    assert mb.sent_count == 2 and mb.next_send_at > datetime.now(UTC)


async def test_end_on_passed_pauses_the_campaign(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, smtp_servers["tls"], mail_users)
    lead = await add_lead(ws, "late@end.example")
    cid = await launched_campaign(http, ws, [box], [lead])
    await update_rows(ws, "campaigns", {"end_on": "2020-01-01"}, id=cid)
    await sender.tick(ws.runtime)
    [campaign] = await rows(ws, "campaigns", id=cid)
    assert campaign.status == "paused" and "2020-01-01" in campaign.paused_reason
    assert await rows(ws, "sends", campaign_id=cid) == []


async def test_each_mailbox_gap_counts_from_its_own_hand_off(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """A slow server delays only its own mailbox: the mailbox whose hand-off ended first is due first, so a
    batch's mailboxes do not all wait for its slowest hand-off."""
    ws = await make_workspace()
    slow_server, fast_server = smtp_servers["starttls"], smtp_servers["tls"]

    def slowly(address: str) -> None:
        if address == "slow@gap.example":
            time.sleep(2.5)

    slow_server.rcpt_reply = slowly
    try:
        slow = await smtp_mailbox(ws, slow_server, mail_users, min_gap_s=60, max_gap_s=60)
        fast = await smtp_mailbox(ws, fast_server, mail_users, min_gap_s=60, max_gap_s=60)
        await launched_campaign(http, ws, [slow], [await add_lead(ws, "slow@gap.example")])
        await launched_campaign(http, ws, [fast], [await add_lead(ws, "fast@gap.example")])
        started = datetime.now(UTC)
        await sender.tick(ws.runtime)
    finally:
        slow_server.rcpt_reply = None
    [slow_box], [fast_box] = await rows(ws, "mailboxes", id=slow), await rows(ws, "mailboxes", id=fast)
    assert received_by(slow_server, "slow@gap.example") and received_by(fast_server, "fast@gap.example")
    gap = timedelta(seconds=60)
    # Relative, not absolute: on a loaded machine the fast hand-off itself may take a second, but it never
    # takes the slow server's 2.5 s pause, which is what waiting for the slowest hand-off would add.
    assert fast_box.next_send_at > started + gap
    assert slow_box.next_send_at - fast_box.next_send_at > timedelta(seconds=1.5)
