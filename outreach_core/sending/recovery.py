"""Hand-offs whose outcome was lost: the sender marks them `unknown` (never repeated automatically), and a
person who checked the mailbox's Sent folder settles each one (`resolve_unknown_send`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func

from outreach_core.campaigns.audience import campaign_lead_out, campaign_lead_row, send_out
from outreach_core.campaigns.lifecycle import WAITING, reopened
from outreach_core.campaigns.store import campaign_row, load_steps
from outreach_core.kernel.bulk import equals_any, update_each
from outreach_core.kernel.context import SystemContext, WorkspaceContext, scoped, system_scope
from outreach_core.kernel.db.tables import campaign_leads, campaigns, leads, sends
from outreach_core.kernel.errors import InvalidState, NotFound
from outreach_core.kernel.rollups import count_sends
from outreach_core.sending.rules import next_step_at
from outreach_core.sending.schemas import ResolvedSend, ResolveUnknownSendIn

LOST_ERROR = (
    "Outcome unknown: the sender stopped during the hand-off to the mail server. "
    "It may have been delivered; it is not sent again automatically."
)


def lost_reason(step: int) -> str:
    return (
        f"Email {step + 1}: outcome unknown (the sender stopped during the hand-off); not sent again "
        "automatically."
    )


async def recover_lost_sends(ctx: SystemContext, *, everything: bool = False) -> int:
    """Mark `sending` ledger rows whose hand-off outcome was lost (the worker died, or the row is older than
    `sender_stale_after_s`) as `unknown`, and stop their campaign leads with a reason saying so. Such an
    email may or may not have arrived: it is never repeated automatically (`resolve_unknown_send` is how a
    person settles it). `everything=True` takes every `sending` row (start-up of the only sender, on
    SQLite)."""
    cutoff = ctx.now if everything else ctx.now - dt.timedelta(seconds=ctx.settings.sender_stale_after_s)
    s = system_scope(sends)
    lost = (
        await ctx.conn.execute(
            s.select(sends.c.id, sends.c.campaign_lead_id, sends.c.step).where(
                sends.c.status == "sending", sends.c.created_at <= cutoff
            )
        )
    ).all()
    if not lost:
        return 0
    await update_each(
        ctx,
        system_scope(sends).update(),
        [{"id": r.id} for r in lost],
        where=lambda v: [sends.c.status == "sending"],
        values=lambda v: {"status": "unknown", "error": LOST_ERROR},
    )
    await update_each(
        ctx,
        system_scope(campaign_leads).update(),
        [
            {"id": r.campaign_lead_id, "step": r.step, "reason": lost_reason(r.step)}
            for r in lost
            if r.campaign_lead_id is not None
        ],
        where=lambda v: [campaign_leads.c.step == v["step"], equals_any(campaign_leads.c.status, *WAITING)],
        values=lambda v: {
            "status": "stopped",
            "reason": v["reason"],
            "next_at": None,
            "finished_at": ctx.now,
        },
    )
    return len(lost)


async def _unknown_send(ctx: WorkspaceContext, id: str, campaignLeadId: str, sendId: str) -> tuple[Any, Any]:
    """The campaign lead and its `unknown` send, locked (404 if either is not this campaign's)."""
    lead = await campaign_lead_row(ctx, id, campaignLeadId, for_update=True)
    send = (
        await ctx.conn.execute(
            scoped(ctx, sends)
            .select()
            .where(sends.c.id == sendId, sends.c.campaign_lead_id == campaignLeadId)
            .with_for_update()
        )
    ).one_or_none()
    if send is None:
        raise NotFound("send", sendId)
    if send.status != "unknown":
        raise InvalidState(
            f"This send is {send.status}: only a send whose outcome was lost (unknown) can be resolved.",
            {"status": send.status},
        )
    return lead, send


async def resolve_unknown_send(
    ctx: WorkspaceContext, id: str, campaignLeadId: str, sendId: str, body: ResolveUnknownSendIn
) -> ResolvedSend:
    """Settle an email whose outcome was lost in a crash (status `unknown` in `list_campaign_lead_sends`;
    the campaign lead is `stopped` with "outcome unknown"). Look in the mailbox's Sent folder first.

    - `delivered: true` — it arrived: the send becomes `sent` (at the time of the hand-off) and the lead
      continues with the next step after its `waitDays`, or is `completed` after the last one.
    - `delivered: false` — it did not arrive: the same step is sent again in the lead's next window, from the
      same mailbox for a follow-up. Only while the lead is still stopped on this email (409 otherwise).

    A completed campaign becomes paused when a lead waits again (launch it to send). Asks to confirm."""
    campaign = await campaign_row(ctx, id, for_update=True)
    lead, send = await _unknown_send(ctx, id, campaignLeadId, sendId)
    stopped_on_it = lead.status == "stopped" and lead.step == send.step
    if not body.delivered and not stopped_on_it:
        raise InvalidState(
            f"The campaign lead is {lead.status} at email {lead.step + 1}, not stopped on this email: it is "
            "not sent again.",
            {"status": lead.status, "step": lead.step},
        )
    lead_values: dict[str, Any] = {}
    if body.delivered:
        await _set_send(ctx, sendId, status="sent", sent_at=send.created_at, error=None)
        await count_sends(ctx, [sendId])
        if stopped_on_it:
            steps = await load_steps(ctx, id)
            following = send.step + 1
            last = following >= len(steps)
            lead_values = {
                "status": "completed" if last else "contacted",
                "step": following,
                "next_at": None if last else next_step_at(send.created_at, steps[following].wait_days),
                "last_sent_at": send.created_at,
                "thread_message_id": func.coalesce(campaign_leads.c.thread_message_id, send.message_id),
                "last_message_id": send.message_id,
                "mailbox_id": send.mailbox_id,
                "finished_at": ctx.now if last else None,
            }
    else:
        error = "Not delivered (checked by a person): sent again."
        await _set_send(ctx, sendId, status="retry", sent_at=None, error=error)
        lead_values = {
            "status": "not_contacted" if send.step == 0 else "contacted",
            "next_at": ctx.now,
            "finished_at": None,
        }
    if lead_values:
        await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .update()
            .where(campaign_leads.c.id == campaignLeadId)
            .values(reason=None, **lead_values)
        )
        reopen = reopened(campaign, "A lead has an email to send again.")
        if reopen and lead_values["status"] in WAITING:
            await ctx.conn.execute(
                scoped(ctx, campaigns)
                .update()
                .where(campaigns.c.id == id)
                .values(updated_at=ctx.now, **reopen)
            )
    return await _resolved(ctx, campaignLeadId, sendId)


async def describe_send(ctx: WorkspaceContext, campaign_lead_id: str, send_id: str) -> str:
    """'email N (“subject”) to address', for the confirmation question."""
    row = (
        await ctx.conn.execute(
            scoped(ctx, sends)
            .select(sends.c.step, sends.c.subject, sends.c.to_email)
            .where(sends.c.id == send_id, sends.c.campaign_lead_id == campaign_lead_id)
        )
    ).one_or_none()
    if row is None:
        return "this email"
    return f"email {row.step + 1} (“{row.subject}”) to {row.to_email}"


async def _set_send(ctx: WorkspaceContext, send_id: str, **values: Any) -> None:
    await ctx.conn.execute(scoped(ctx, sends).update().where(sends.c.id == send_id).values(**values))


async def _resolved(ctx: WorkspaceContext, campaign_lead_id: str, send_id: str) -> ResolvedSend:
    lead = (
        await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .select()
            .add_columns(leads.c.email, leads.c.first_name, leads.c.last_name, leads.c.company)
            .join(leads, leads.c.id == campaign_leads.c.lead_id)
            .where(campaign_leads.c.id == campaign_lead_id)
        )
    ).one()
    send = (await ctx.conn.execute(scoped(ctx, sends).select().where(sends.c.id == send_id))).one()
    return ResolvedSend(send=send_out(send), lead=campaign_lead_out(lead))
