"""What ingested messages change: out-of-office rescheduling, unsubscribe requests, hard and soft bounces
(suppression, bounce threshold, retry once), stopForCompany, labels on leads with their events, and a
manual label that the classifier never overwrites."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from sqlalchemy import update

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import lead_labels, suppressions, threads
from tests.conftest import MakeWorkspace
from tests.dates import long_date, month_day, next_weekday, today
from tests.inbox.ingest import (
    builtin_id,
    dsn,
    fetched,
    ingest,
    lead_row,
    messages_of,
    read,
    reply_to,
    sent_campaign,
    threads_of,
)
from tests.inbox.test_ingest import events
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import FIRST, FOLLOW_UP, received_by, rows, update_rows
from workers import sender

THURSDAY = 3


@pytest.fixture
def smtp(smtp_servers: dict[str, SmtpServer]) -> SmtpServer:
    return smtp_servers["starttls"]


async def labels_of(ws: Any, lead_id: str) -> set[str]:
    found = await read(
        ws, lambda ctx: scoped(ctx, lead_labels).select().where(lead_labels.c.lead_id == lead_id)
    )
    return {r.label_id for r in found}


async def suppressed(ws: Any) -> dict[str, str]:
    found = await read(ws, lambda ctx: scoped(ctx, suppressions).select())
    return {r.value: r.reason for r in found}


async def test_out_of_office_with_a_return_date_reschedules_the_next_step(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "fay@fay-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email], {email: {"timezone": "Europe/Berlin"}})
    [before] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    back = next_weekday(THURSDAY, after=today(), at_least_days=8)  # later than the planned follow-up
    raw = reply_to(
        sent.received[email],
        f"Thank you for your message. I am out of the office until {long_date(back)} "
        "with limited access to email.",
        subject="Automatic reply: " + str(sent.received[email]["Subject"]),
        headers={"Auto-Submitted": "auto-replied"},
    )
    assert await ingest(sent, fetched(raw)) == 1
    [thread] = await threads_of(ws)
    assert thread.kind == "out_of_office" and thread.label_name == "Out of office"
    assert thread.label_source == "rules" and back.isoformat() in thread.label_reason
    [cl] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    # the working day after a Thursday is the Friday: midnight in Berlin
    friday = datetime.combine(back + timedelta(days=1), time(), tzinfo=ZoneInfo("Europe/Berlin"))
    assert cl.status == "rescheduled" and cl.step == 1
    assert cl.next_at == friday.astimezone(UTC) > before.next_at
    lead = await lead_row(ws, sent.leads[email])
    assert lead.status == "active"  # an automatic answer is not a reply
    assert await labels_of(ws, lead.id) == {await builtin_id(ws, "out_of_office")}
    [labeled] = await events(ws, "lead.labeled")
    assert labeled["data"]["label"]["name"] == "Out of office" and labeled["data"]["source"] == "rules"
    assert labeled["data"]["thread"]["id"] == thread.id and labeled["data"]["step"]["position"] == 0
    assert await events(ws, "lead.replied") == []


async def test_out_of_office_never_moves_the_next_step_earlier(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "gus@gus-corp.example"
    # the follow-up is planned ten days after the first email; the lead is back after today
    steps = [{"variants": [FIRST]}, {"waitDays": 10, "variants": [FOLLOW_UP]}]
    sent = await sent_campaign(http, ws, smtp, mail_users, [email], steps=steps)
    [before] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert before.next_at > datetime.now(UTC) + timedelta(days=9)
    raw = reply_to(
        sent.received[email], f"I am out of the office until {month_day(today())}.",
        headers={"Auto-Submitted": "auto-replied"},
    )  # fmt: skip
    await ingest(sent, fetched(raw))
    [thread] = await threads_of(ws)
    assert f"back {today().isoformat()}" in thread.label_reason  # the return date was read
    [cl] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert cl.status == "rescheduled" and cl.next_at == before.next_at


async def test_an_unsubscribe_request_unsubscribes_like_the_link(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "hal@hal-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    raw = reply_to(sent.received[email], "Please remove me from your mailing list.")
    assert await ingest(sent, fetched(raw)) == 1
    [thread] = await threads_of(ws)
    assert thread.kind == "unsubscribe_request" and thread.label_name == "Unsubscribe request"
    lead = await lead_row(ws, sent.leads[email])
    assert lead.status == "unsubscribed"
    assert (await suppressed(ws)) == {email: "unsubscribed"}
    [cl] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert cl.status == "unsubscribed" and cl.next_at is None
    [event] = await events(ws, "lead.unsubscribed")
    assert event["data"]["source"] == "reply" and event["data"]["thread"]["id"] == thread.id
    assert event["data"]["campaign"]["id"] == sent.campaign_id
    assert await events(ws, "lead.replied") == []


async def test_a_hard_bounce_suppresses_the_address_and_pauses_at_the_threshold(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    emails = [f"p{n}@pause-corp{n}.example" for n in range(20)]
    sent = await sent_campaign(http, ws, smtp, mail_users, emails)
    ledger = await rows(ws, "sends", campaign_id=sent.campaign_id)
    assert len(ledger) == 20 and {s.status for s in ledger} == {"sent"}
    victim = emails[3]
    original = sent.received[victim]
    raw = dsn(original, "5.1.1", f"550 5.1.1 <{victim}>: Recipient address rejected: User unknown")
    assert await ingest(sent, fetched(raw)) == 1

    [thread] = await threads_of(ws)
    assert thread.kind == "bounce" and thread.label_name == "Bounce"
    assert thread.lead_id == sent.leads[victim]
    [message] = await messages_of(ws)
    assert message.bounce == {"status": "5.1.1", "hard": True, "reason": "user unknown", "recipient": victim}
    [send] = [s for s in await rows(ws, "sends", campaign_id=sent.campaign_id) if s.to_email == victim]
    assert message.send_id == send.id and send.status == "bounced"
    assert (await lead_row(ws, sent.leads[victim])).status == "bounced"
    assert await suppressed(ws) == {victim: "bounced"}
    [cl] = await rows(ws, "campaign_leads", lead_id=sent.leads[victim])
    assert cl.status == "bounced" and cl.reason.startswith("Email 1 bounced: 5.1.1")
    [bounced] = await events(ws, "lead.bounced")
    assert bounced["data"]["bounce"] == {
        "status": "5.1.1",
        "hard": True,
        "reason": f"550 5.1.1 <{victim}>: Recipient address rejected: User unknown",
        "recipient": victim,
        "source": "inbox",
    }
    assert bounced["data"]["thread"]["id"] == thread.id and bounced["data"]["step"]["position"] == 0
    # 1 of 20 emails bounced: the default threshold of 5 % is reached
    [campaign] = await rows(ws, "campaigns", id=sent.campaign_id)
    assert campaign.status == "paused" and "1 of 20" in campaign.paused_reason
    [paused] = await events(ws, "campaign.paused")
    assert paused["data"]["cause"] == "bounce_rate"


async def test_a_soft_bounce_sends_the_step_again_once(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "ida@ida-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    raw = dsn(sent.received[email], "5.2.2", f"552 5.2.2 <{email}>: Mailbox full")
    before = datetime.now(UTC)
    assert await ingest(sent, fetched(raw)) == 1
    [send] = await rows(ws, "sends", campaign_id=sent.campaign_id)
    assert send.status == "retry"
    [cl] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert (cl.status, cl.step) == ("rescheduled", 0)
    assert before + timedelta(hours=11) < cl.next_at < before + timedelta(hours=13)
    assert (await lead_row(ws, sent.leads[email])).status == "active"
    assert await suppressed(ws) == {} and await events(ws, "lead.bounced") == []
    [message] = await messages_of(ws)
    assert message.bounce["hard"] is False and message.bounce["reason"] == "mailbox full"
    # a second report on the same email (the retry not sent yet) changes nothing more
    again = dsn(sent.received[email], "5.2.2", f"552 5.2.2 <{email}>: Mailbox full")
    assert await ingest(sent, fetched(again)) == 1
    [cl2] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert (cl2.status, cl2.step, cl2.next_at) == ("rescheduled", 0, cl.next_at)
    # once due, the sender sends the step again through the same ledger row (a new Message-ID)
    await update_rows(ws, "campaign_leads", {"next_at": before}, id=cl.id)
    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=sent.mailbox_id)
    await sender.tick(ws.runtime)
    assert len(received_by(smtp, email)) == 2
    [resent] = await rows(ws, "sends", campaign_id=sent.campaign_id)
    assert (resent.status, resent.attempts, resent.id) == ("sent", 2, send.id)
    assert resent.message_id != send.message_id
    [cl3] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert (cl3.status, cl3.step) == ("contacted", 1)


async def test_a_complaint_report_unsubscribes_and_suppresses(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "liz@liz-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    original = sent.received[email]
    assert await ingest(sent, fetched(arf(original))) == 1
    [thread] = await threads_of(ws)
    assert thread.kind == "unsubscribe_request" and thread.label_name == "Unsubscribe request"
    assert "abuse" in thread.label_reason
    [message] = await messages_of(ws, thread.id)
    assert message.kind == "complaint"  # counted as a complaint; the thread kinds are fixed
    assert (await lead_row(ws, sent.leads[email])).status == "unsubscribed"
    assert await suppressed(ws) == {email: "unsubscribed"}
    [event] = await events(ws, "lead.unsubscribed")
    assert event["data"]["source"] == "complaint" and event["data"]["step"]["position"] == 0


def arf(original: Any) -> bytes:
    """An ARF (RFC 5965) abuse report from a mailbox provider's feedback loop, returning our email."""
    rcpt = original["To"].addresses[0].addr_spec
    headers = "".join(f"{k}: {v}\r\n" for k, v in original.items())
    text = (
        "From: Feedback Loop <fbl@isp.example>\r\nTo: abuse@mail.test\r\nSubject: Abuse report\r\n"
        "Message-ID: <fbl-1@isp.example>\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=feedback-report; boundary="B"\r\n\r\n'
        "--B\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report.\r\n"
        "--B\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\n"
        f"User-Agent: ISP-FBL/1.0\r\nVersion: 1\r\nOriginal-Rcpt-To: {rcpt}\r\n\r\n"
        f"--B\r\nContent-Type: message/rfc822\r\n\r\n{headers}\r\nHello\r\n--B--\r\n"
    )
    return text.encode()


async def test_a_delay_warning_is_recorded_without_effects(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "jo@jo-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    raw = dsn(sent.received[email], "4.4.1", "451 4.4.1 connection timed out", action="delayed")
    assert await ingest(sent, fetched(raw)) == 1
    [cl] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert (cl.status, cl.step) == ("contacted", 1)
    [send] = await rows(ws, "sends", campaign_id=sent.campaign_id)
    assert send.status == "sent"


async def test_stop_for_company_stops_colleagues_but_not_free_mail(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    emails = ["kim@kim-corp.example", "lou@kim-corp.example", "max@other-corp.example"]
    sent = await sent_campaign(http, ws, smtp, mail_users, emails, stopForCompany=True)
    raw = reply_to(sent.received["kim@kim-corp.example"], "Happy to chat, Thursday works.")
    await ingest(sent, fetched(raw))
    status = {
        cl.lead_id: (cl.status, cl.reason)
        for cl in await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    }
    assert status[sent.leads["kim@kim-corp.example"]][0] == "replied"
    assert status[sent.leads["lou@kim-corp.example"]] == ("stopped", "Someone at the same company replied.")
    assert status[sent.leads["max@other-corp.example"]][0] == "contacted"

    ws2 = await make_workspace()
    free = ["ann.free@gmail.com", "bob.free@gmail.com"]
    sent2 = await sent_campaign(http, ws2, smtp, mail_users, free, stopForCompany=True)
    await ingest(sent2, fetched(reply_to(sent2.received[free[0]], "Sure, tell me more.")))
    status2 = {
        cl.lead_id: cl.status for cl in await rows(ws2, "campaign_leads", campaign_id=sent2.campaign_id)
    }
    assert status2[sent2.leads[free[1]]] == "contacted"


async def test_a_manual_label_is_never_overwritten_by_the_classifier(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "ned@ned-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    original = sent.received[email]
    await ingest(sent, fetched(reply_to(original, "Interesting, tell me more.")))
    [thread] = await threads_of(ws)
    meeting = await builtin_id(ws, "meeting_booked")

    async def label_by_hand(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            update(threads)
            .where(threads.c.id == thread.id, threads.c.workspace_id == ctx.workspace_id)
            .values(label_id=meeting, label_source="manual", label_reason="set by a person")
        )

    await ws.runtime.execute(await ws.principal(), label_by_hand)
    back = f"until {month_day(today() + timedelta(days=5))}"
    ooo = reply_to(original, f"I am on vacation {back}.", headers={"Auto-Submitted": "auto-replied"})
    # arrives after the reply (both now): a fixed date beside the real clock made it older on any later day
    await ingest(sent, fetched(ooo))
    [after] = await threads_of(ws)
    assert (after.label_id, after.label_source, after.label_reason) == (meeting, "manual", "set by a person")
    # the person's reply outranks the automatic answer: the thread stays a reply (docs/inbox.md)
    assert after.kind == "reply" and after.message_count == 2 and after.unread is True
    assert [m.kind for m in await messages_of(ws, thread.id)] == ["reply", "out_of_office"]
    assert await labels_of(ws, sent.leads[email]) == set()  # the classifier's label went nowhere
