"""A batch's writes: a label's triggers run once per lead however many leads of the batch get that label, and
a thread changed by someone else after the batch read it keeps that change (the count grows, a label set by
a person stays)."""

from __future__ import annotations

from collections import Counter
from email.message import EmailMessage

import httpx
import pytest
from sqlalchemy import text, update

from outreach_core.inbox.known import Pending, load_threads
from outreach_core.inbox.matching import latest_sends_query
from outreach_core.inbox.record import inbox_context
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import label_timers, labels, threads
from outreach_core.labels.schemas import LabelTriggers
from tests.conftest import MakeWorkspace
from tests.inbox.ingest import builtin_id, dsn, fetched, ingest, read, reply_to, sent_campaign, threads_of
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import rows


@pytest.fixture
def smtp(smtp_servers: dict[str, SmtpServer]) -> SmtpServer:
    return smtp_servers["starttls"]


async def test_one_timer_per_lead_when_a_batch_labels_several_leads_alike(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    emails = [f"timer{n}@timer{n}-corp.example" for n in range(4)]
    sent = await sent_campaign(http, ws, smtp, mail_users, emails)
    ooo = await builtin_id(ws, "auto_reply")

    async def with_timer(ctx: WorkspaceContext) -> None:
        triggers = LabelTriggers.model_validate({"removeAfterDays": 3}).model_dump(mode="json")
        await ctx.conn.execute(
            update(labels)
            .where(labels.c.id == ooo, labels.c.workspace_id == ctx.workspace_id)
            .values(triggers=triggers)
        )

    await ws.runtime.execute(await ws.principal(), with_timer)
    auto = {"Auto-Submitted": "auto-replied"}
    replies = [
        fetched(reply_to(sent.received[e], "Thanks, we got your message.", headers=auto)) for e in emails
    ]
    assert await ingest(sent, *replies) == 4
    assert {t.label_id for t in await threads_of(ws)} == {ooo}
    timers = await read(ws, lambda ctx: scoped(ctx, label_timers).select())
    assert Counter(t.lead_id for t in timers) == {sent.leads[e]: 1 for e in emails}


async def test_a_flush_keeps_a_manual_label_and_a_count_changed_since_the_batch_read_the_thread(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "race.ola@race-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    await ingest(sent, fetched(reply_to(sent.received[email], "Interesting, tell me more.")))
    [thread] = await threads_of(ws)
    meeting = await builtin_id(ws, "meeting_booked")
    auto_reply = await builtin_id(ws, "auto_reply")

    async def race(ctx: WorkspaceContext) -> None:
        wctx = inbox_context(ctx, ws.workspace_id)
        pending = Pending(await load_threads(wctx, [thread.conversation]))
        state = pending.threads[thread.conversation]
        # meanwhile, a person labels the thread and another batch adds two messages
        await ctx.conn.execute(
            update(threads)
            .where(threads.c.id == thread.id)
            .values(label_id=meeting, label_source="manual", label_reason="by hand", message_count=3)
        )
        state.values.update(
            label_id=auto_reply,
            label_source="rules",
            label_reason="auto-reply",
            message_count=state.values["message_count"] + 1,
        )
        state.dirty, state.added = True, 1
        await pending.flush(wctx)

    await ws.runtime.system(race)
    [after] = await threads_of(ws)
    assert (after.label_id, after.label_source, after.label_reason) == (meeting, "manual", "by hand")
    assert after.message_count == 4


async def test_our_own_mail_read_back_from_a_folder_is_not_a_reply(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    a, b = "own.rae@own-corp.example", "own.sol@own-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [a, b])
    # written from the mailbox's own address in a mail client, threaded on our email to `a`
    from_us = reply_to(sent.received[a], "Following up by hand.", sender=f"Sam <{sent.mailbox_email}>")
    # a copy of our email to `b` (its Message-ID is in the ledger) sent from an alias, threaded on `a`'s
    copy = EmailMessage()
    for name, value in sent.received[b].items():
        if name.lower() in ("to", "subject", "date", "message-id"):
            copy[name] = value
    copy["From"] = "Sam <sam@alias.example>"
    copy["In-Reply-To"] = copy["References"] = str(sent.received[a]["Message-ID"])
    copy.set_content("Hello again")
    assert await ingest(sent, fetched(from_us), fetched(copy.as_bytes())) == 0
    assert await threads_of(ws) == []
    statuses = {cl.status for cl in await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)}
    assert statuses == {"contacted"}


async def test_the_match_by_address_walks_the_sends_of_the_leads_only(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "plan.uma@plan-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    sqlite = ws.runtime.is_sqlite

    async def plan(ctx: WorkspaceContext) -> str:
        stmt = latest_sends_query(ctx, sent.mailbox_id, [sent.leads[email], "lead_other"])
        sql = str(stmt.compile(dialect=ctx.conn.dialect, compile_kwargs={"literal_binds": True}))
        if sqlite:
            return "\n".join(str(r[-1]) for r in await ctx.conn.execute(text("EXPLAIN QUERY PLAN " + sql)))
        await ctx.conn.execute(text("SET LOCAL enable_seqscan = off"))
        return "\n".join(str(r[0]) for r in await ctx.conn.execute(text("EXPLAIN " + sql)))

    steps = await ws.runtime.read(await ws.principal(), plan)
    assert "ix_sends_lead_mailbox" in steps, steps


async def test_an_auto_reply_or_an_unlabelled_reply_keeps_an_interested_label_a_bounce_replaces_it(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users
) -> None:
    ws = await make_workspace()
    email = "keep.vic@keep-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    original = sent.received[email]
    await ingest(sent, fetched(reply_to(original, "Yes, interested. Call me.")))
    [thread] = await threads_of(ws)
    interested = await builtin_id(ws, "interested")

    async def labelled_by_ai(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            update(threads)
            .where(threads.c.id == thread.id)
            .values(label_id=interested, label_source="ai", label_reason="AI: wants a call")
        )

    await ws.runtime.execute(await ws.principal(), labelled_by_ai)
    auto = reply_to(
        original, "Thank you, your message was received.", headers={"Auto-Submitted": "auto-replied"}
    )
    await ingest(sent, fetched(auto), fetched(reply_to(original, "One more thing: Tuesday works.")))
    [after] = await threads_of(ws)
    assert (after.label_id, after.label_source, after.label_reason) == (interested, "ai", "AI: wants a call")
    assert after.message_count == 3
    await ingest(sent, fetched(dsn(original, "5.1.1", "550 5.1.1 mailbox unknown")))
    [bounced] = await threads_of(ws)
    assert (bounced.kind, bounced.label_id) == ("bounce", await builtin_id(ws, "bounce"))
