"""What a recorded message changes, in the transaction that records it (docs/inbox.md, "Effects").

- reply: lead `replied`, `interested` with a positive label (`thread_labels.status_moves`); the campaign
  lead `replied` when the campaign stops on reply (its sequence ends) or had already finished its steps;
  `stopForCompany` stops the other leads of the same company domain in that campaign; `lead.replied`.
- out of office with a return date: the campaign lead `rescheduled`, its next step due the working day
  after that date (midnight in the lead's zone), never earlier than planned.
- unsubscribe request, complaint report: exactly the one-click link's unsubscribe (`campaigns/unsubscribe`).
- hard bounce: lead and campaign lead `bounced`, the address suppressed, the ledger row `bounced` (so it
  counts toward the campaign's bounce threshold, checked once per campaign after the batch, as by the
  sender), `lead.bounced`.
- soft bounce (not a delay warning): the step is sent again once, 12 hours later.
- the thread's label (not manual) does to the lead what a person's label does (`thread_labels`): status,
  triggers, `lead.labeled`; once per label for the whole batch (`put_labels`, called by the recorder at the
  end).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from outreach_core.campaigns.schedule import zone
from outreach_core.campaigns.stops import is_company_domain
from outreach_core.campaigns.unsubscribe import STOPPABLE, unsubscribe_lead
from outreach_core.events.data import iso_z
from outreach_core.inbox.known import CampaignLead, Known, Pending, event_data
from outreach_core.inbox.rules import BounceRecipient, Classification
from outreach_core.inbox.thread_labels import label_thread_leads, labeled_data, status_moves
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_leads, inbox_messages, leads, sends
from outreach_core.kernel.rollups import count_sends
from outreach_core.sending import rules as send_rules
from outreach_core.sending.outcomes import check_bounce_rate
from outreach_core.targets.suppression import SUPPRESSIBLE_STATUSES, suppress_lead_ids

SOFT_BOUNCE_RETRY = send_rules.RETRY_CAP
"""A soft-bounced step is sent again once, this long after the bounce was read."""
EVENT_TEXT_LIMIT = 4000


@dataclass(frozen=True)
class Received:
    """One recorded message, as the effects need it."""

    message_id: str  # our row id
    thread_id: str
    lead_id: str
    lead_email: str
    campaign_id: str | None
    send_id: str | None
    verdict: Classification
    from_email: str
    subject: str
    text: str
    arrived_at: dt.datetime
    label_id: str | None  # the label this message set on its thread (None: the thread kept its own, or none)
    label_source: Literal["rules", "ai"]
    thread_subject: str
    known: Known
    pending: Pending

    async def data(self, ctx: WorkspaceContext, **extra: Any) -> dict[str, Any]:
        """An event's `data` about this message's lead (`event_data.lead_event_data`'s shape)."""
        thread = {"id": self.thread_id, "subject": self.thread_subject}
        return await event_data(
            ctx,
            self.known,
            self.lead_id,
            campaign_id=self.campaign_id,
            send_id=self.send_id,
            thread=thread,
            **extra,
        )


async def apply_effects(ctx: WorkspaceContext, m: Received) -> None:
    kind = m.verdict.kind
    label = m.known.labels.get(m.label_id) if m.label_id is not None else None
    if kind == "reply":
        await _replied(ctx, m, label_type=None if label is None else label[1])
    elif kind == "out_of_office" and m.verdict.return_date is not None:
        await _away(ctx, m, m.verdict.return_date)
    elif kind in ("unsubscribe_request", "complaint"):
        source = "complaint" if kind == "complaint" else "reply"
        await m.pending.flush(ctx)  # it reads the thread for its event, and records that event itself
        await unsubscribe_lead(
            ctx, m.lead_id, m.campaign_id, source=source, send_id=m.send_id, thread_id=m.thread_id
        )
        m.known.people[m.lead_id].status = "unsubscribed"
        for (_, lead_id), cl in m.known.cls.items():
            if lead_id == m.lead_id and cl.status in STOPPABLE:
                cl.status, cl.next_at = "unsubscribed", None
    elif kind == "bounce":
        await _bounced(ctx, m)


def _campaign_lead(m: Received) -> CampaignLead | None:
    """The lead's campaign lead in the message's campaign, as the batch has left it (`Known.cls`)."""
    return None if m.campaign_id is None else m.known.cls.get((m.campaign_id, m.lead_id))


async def _set_campaign_lead(ctx: WorkspaceContext, cl: CampaignLead, **values: Any) -> None:
    await ctx.conn.execute(
        scoped(ctx, campaign_leads).update().where(campaign_leads.c.id == cl.id).values(**values)
    )
    for name in ("status", "step", "next_at"):
        if name in values:
            setattr(cl, name, values[name])


async def _replied(ctx: WorkspaceContext, m: Received, *, label_type: str | None) -> None:
    now = ctx.now
    person = m.known.people[m.lead_id]
    status = status_moves(label_type, replied=True).get(person.status, person.status)
    if status != person.status:
        await ctx.conn.execute(
            scoped(ctx, leads).update().where(leads.c.id == m.lead_id).values(status=status, updated_at=now)
        )
        person.status = status
    cl = _campaign_lead(m)
    facts = m.known.campaigns.get(m.campaign_id or "")
    if cl is not None and facts is not None:
        stop = facts.stop_on_reply and cl.status in STOPPABLE
        if stop or cl.status == "completed":
            await _set_campaign_lead(
                ctx, cl, status="replied", reason="The lead replied.", next_at=None, finished_at=now
            )
        if facts.stop_for_company:
            await _stop_company(ctx, m)
    message = {
        "id": m.message_id,
        "from": m.from_email,
        "subject": m.subject,
        "text": m.verdict.own_text[:EVENT_TEXT_LIMIT] or m.text[:EVENT_TEXT_LIMIT],
        "receivedAt": iso_z(m.arrived_at),
    }
    m.pending.events.append(("lead.replied", await m.data(ctx, message=message)))


async def _stop_company(ctx: WorkspaceContext, m: Received) -> None:
    """The other leads of the replying lead's company domain in the campaign get no more email."""
    domain = m.known.people[m.lead_id].domain
    if not is_company_domain(domain):
        return
    colleagues = (
        scoped(ctx, leads).select(leads.c.id).where(leads.c.domain == domain, leads.c.id != m.lead_id)
    )
    await ctx.conn.execute(
        scoped(ctx, campaign_leads)
        .update()
        .where(
            campaign_leads.c.campaign_id == m.campaign_id,
            campaign_leads.c.lead_id.in_(colleagues),
            campaign_leads.c.status.in_(STOPPABLE),
        )
        .values(
            status="stopped", reason="Someone at the same company replied.", next_at=None, finished_at=ctx.now
        )
    )
    for (campaign_id, lead_id), cl in m.known.cls.items():
        person = m.known.people.get(lead_id)
        colleague = person is not None and person.domain == domain and lead_id != m.lead_id
        if colleague and campaign_id == m.campaign_id and cl.status in STOPPABLE:
            cl.status, cl.next_at = "stopped", None


def back_at(return_date: dt.date, zone_name: str | None, fallback: str) -> dt.datetime:
    """Midnight (in the lead's zone) of the first working day (Monday to Friday) after `return_date`."""
    day = return_date + dt.timedelta(days=1)
    while day.weekday() >= 5:
        day += dt.timedelta(days=1)
    return dt.datetime.combine(day, dt.time(), tzinfo=zone(zone_name, fallback)).astimezone(dt.UTC)


async def _away(ctx: WorkspaceContext, m: Received, return_date: dt.date) -> None:
    cl = _campaign_lead(m)
    facts = m.known.campaigns.get(m.campaign_id or "")
    if cl is None or facts is None or cl.status not in STOPPABLE:
        return
    due = back_at(return_date, m.known.people[m.lead_id].timezone, facts.timezone_fallback)
    planned = cl.next_at or ctx.now
    next_at = max(planned, due)
    await _set_campaign_lead(
        ctx,
        cl,
        status="rescheduled",
        next_at=next_at,
        reason=f"Out of office until {return_date.isoformat()}; next email from {iso_z(next_at)}."[:200],
    )


async def _bounced(ctx: WorkspaceContext, m: Received) -> None:
    first = failed_recipient(m.verdict, m.lead_email)
    if first is None or all(b.action == "delayed" for b in m.verdict.bounces):
        return  # a delay warning: the MTA is still trying; recorded, nothing else
    send = await _send(ctx, m.send_id)
    if first.hard:
        await _hard_bounce(ctx, m, first, send)
    elif send is not None:
        await _soft_bounce(ctx, m, send)


def failed_recipient(verdict: Classification, lead_email: str) -> BounceRecipient | None:
    """The failed recipient a bounce is about: the lead's address when the report names it, else the first."""
    failed = verdict.bounces
    if verdict.kind != "bounce" or not failed:
        return None
    return next((b for b in failed if b.recipient == lead_email), failed[0])


async def _send(ctx: WorkspaceContext, send_id: str | None) -> Any:
    if send_id is None:
        return None
    return (
        await ctx.conn.execute(
            scoped(ctx, sends)
            .select(sends.c.id, sends.c.status, sends.c.step, sends.c.campaign_lead_id, sends.c.campaign_id)
            .where(sends.c.id == send_id)
        )
    ).one_or_none()


async def _hard_bounce(ctx: WorkspaceContext, m: Received, failed: Any, send: Any) -> None:
    now = ctx.now
    person = m.known.people[m.lead_id]
    if person.status not in ("bounced", "unsubscribed"):
        await ctx.conn.execute(
            scoped(ctx, leads)
            .update()
            .where(leads.c.id == m.lead_id)
            .values(status="bounced", updated_at=now)
        )
        person.status = "bounced"
    await suppress_lead_ids(
        ctx, scoped(ctx, leads).select(leads.c.id).where(leads.c.id == m.lead_id), "bounced"
    )
    code = failed.status or failed.reply_code
    if send is not None:
        await count_sends(ctx, [send.id], -1)  # the rollups: un-count, change, count again
        await ctx.conn.execute(
            scoped(ctx, sends)
            .update()
            .where(sends.c.id == send.id, sends.c.status == "sent")
            .values(status="bounced", error=f"bounce read from the mailbox: {m.verdict.reason}"[:1000])
        )
        await count_sends(ctx, [send.id])
    cl = _campaign_lead(m)
    if cl is not None and cl.status in (*STOPPABLE, "completed"):
        step = (send.step if send is not None else max(cl.step - 1, 0)) + 1
        await _set_campaign_lead(
            ctx,
            cl,
            status="bounced",
            reason=f"Email {step} bounced: {code or ''} {failed.reason}".replace("  ", " ")[:200],
            next_at=None,
            finished_at=now,
        )
    bounce = {
        "status": code,
        "hard": True,
        "reason": (failed.diagnostic or failed.reason)[:300],
        "recipient": failed.recipient,
        "source": "inbox",
    }
    m.pending.events.append(("lead.bounced", await m.data(ctx, bounce=bounce)))
    if m.campaign_id is not None:
        m.pending.bounced_campaigns.add(m.campaign_id)


async def _soft_bounce(ctx: WorkspaceContext, m: Received, send: Any) -> None:
    """Send the bounced step again once, later: only when it is the lead's latest email, the lead still
    gets email, and no earlier bounce of that email was read (the retry's bounce ends it)."""
    cl = _campaign_lead(m)
    if cl is None or send.campaign_lead_id != cl.id or send.status != "sent" or cl.step != send.step + 1:
        return
    if cl.status not in ("contacted", "rescheduled", "completed"):
        return
    earlier = (
        await ctx.conn.execute(
            scoped(ctx, inbox_messages)
            .select(inbox_messages.c.id)
            .where(
                inbox_messages.c.send_id == send.id,
                inbox_messages.c.kind == "bounce",
                inbox_messages.c.id != m.message_id,
            )
            .limit(1)
        )
    ).first()
    if earlier is not None:
        return
    await count_sends(ctx, [send.id], -1)  # sent again later: counted when it is
    await ctx.conn.execute(
        scoped(ctx, sends)
        .update()
        .where(sends.c.id == send.id)
        .values(status="retry", error=f"soft bounce, sent again once: {m.verdict.reason}"[:1000])
    )
    await _set_campaign_lead(
        ctx,
        cl,
        status="rescheduled",
        step=send.step,
        next_at=ctx.now + SOFT_BOUNCE_RETRY,
        finished_at=None,
        reason=f"Email {send.step + 1} bounced (soft); sent again once later."[:200],
    )


async def check_bounce_rates(ctx: WorkspaceContext, pending: Pending) -> None:
    """The bounce threshold of each campaign that had a hard bounce in the batch, once per campaign (one count
    of its ledger each), after the batch's writes: `campaign.paused`, if any, follows the bounces."""
    for campaign_id in sorted(pending.bounced_campaigns):
        await check_bounce_rate(ctx, campaign_id)
    pending.bounced_campaigns.clear()


async def put_labels(ctx: WorkspaceContext, received: Sequence[Received]) -> None:
    """Put the labels the batch's messages set on their leads (`thread_labels.label_thread_leads`, the path a
    person's label takes too), once per label for the whole batch (the label's triggers run on the leads
    stamped with the transaction's time: a second call for the same label would run them again for the
    first call's leads); `lead.labeled` for each lead newly labelled."""
    by_label: dict[str, list[Received]] = {}
    for m in received:
        if m.label_id is not None and m.label_id in m.known.labels:
            by_label.setdefault(m.label_id, []).append(m)
    for label_id, group in by_label.items():
        row, label_type = group[0].known.labels[label_id]
        ids = sorted({m.lead_id for m in group})
        newly = await label_thread_leads(ctx, row, label_type, ids, group[0].label_source)
        moves = status_moves(label_type)
        for lead_id in ids:  # what the status moves did to the rows
            person = group[0].known.people[lead_id]
            person.status = moves.get(person.status, person.status)
        for m in group:
            if m.lead_id not in newly:
                continue
            newly.discard(m.lead_id)  # one event per lead, for the first message that labelled it
            person = m.known.people[m.lead_id]
            if row.triggers.suppress and person.status in SUPPRESSIBLE_STATUSES:
                person.status = "suppressed"  # what the trigger did to the row
            data = await m.data(ctx)
            m.pending.events.append(("lead.labeled", labeled_data(data, row, m.label_source)))
