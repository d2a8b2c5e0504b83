"""The outcomes of a batch's hand-offs (docs/sending.md, "Outcomes"): the ledger row, the campaign lead's
progress, the mailbox, the lead on a bounce (with `lead.bounced`), the bounce threshold, and campaign leads
that reach their final status.

Across workspaces like the scheduling pass (on the architecture test's `system_scope` allow-list); what
belongs to one workspace (pausing a campaign, events) runs through that workspace's own context in the
same transaction.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Integer, func

from outreach_core.campaigns.lifecycle import lifecycle_principal, pause_for
from outreach_core.events.data import lead_event_data
from outreach_core.events.outbox import record_event
from outreach_core.kernel.bulk import equals_any, update_each
from outreach_core.kernel.context import SystemContext, WorkspaceContext, as_workspace, scoped, system_scope
from outreach_core.kernel.db.tables import campaign_leads, campaigns, leads, mailboxes, sends
from outreach_core.kernel.ports import Delivery
from outreach_core.kernel.rollups import count_sends
from outreach_core.sending import rules
from outreach_core.sending.handoff import Handoff, Job


async def finish_leads(ctx: SystemContext, finals: list[dict[str, Any]]) -> None:
    """Campaign leads that got their final status (`{id, status, reason, finished_at, next_at}` rows): stopped
    by a stop rule, completed, or failed."""
    await update_each(ctx, system_scope(campaign_leads).update(), finals)


async def resolve_batch(ctx: SystemContext, handoffs: Iterable[Handoff]) -> dict[str, int]:
    """Record each hand-off's outcome (docs/sending.md, "Outcomes"): the ledger row, the campaign lead's
    progress, the mailbox, the lead on a bounce (with `lead.bounced`), and the bounce threshold. Returns
    counts by outcome."""
    now = ctx.now
    counts: dict[str, int] = defaultdict(int)
    send_updates: list[dict[str, Any]] = []
    lead_updates: list[dict[str, Any]] = []
    given_back: dict[str, int] = defaultdict(int)
    sent_boxes: list[dict[str, Any]] = []
    next_sends: list[dict[str, Any]] = []
    broken: dict[str, str] = {}
    bounced: list[tuple[Job, Delivery]] = []  # and the server's refusal
    handoffs_sent: dict[str, list[str]] = defaultdict(list)  # sent or bounced, by workspace
    for handoff in handoffs:
        job, delivery = handoff.job, handoff.delivery
        outcome: rules.Outcome = (
            "sent" if delivery.ok else rules.classify(delivery.phase, delivery.code, delivery.reason)
        )
        if outcome == "retry" and job.attempts >= rules.MAX_ATTEMPTS:
            outcome = "failed"
        counts[outcome] += 1
        label = f"Email {job.step + 1}"
        send: dict[str, Any] = {
            "id": job.send_id,
            "status": outcome,
            "error": None,
            "sent_at": None,
            "attempts": job.attempts,
        }
        lead: dict[str, Any] = {
            "id": job.campaign_lead_id,
            "step_was": job.step,
            "status": "rescheduled",
            "step": job.step,
            "reason": None,
            "next_at": None,
            "last_sent_at": None,
            "thread_message_id": None,
            "last_message_id": None,
            "mailbox_id": job.mailbox_id,
            "finished_at": None,
        }
        # from the end of this mailbox's own hand-off, not of the whole batch: mailboxes whose hand-offs
        # ended early are due early, so a batch's mailboxes spread out instead of waiting for its slowest
        next_sends.append(
            {"id": job.mailbox_id, "next_send_at": handoff.ended_at + dt.timedelta(seconds=job.gap_s)}
        )
        if outcome == "sent":
            last = job.next_wait_days is None
            send |= {"sent_at": now}
            lead |= {
                "status": "completed" if last else "contacted",
                "step": job.step + 1,
                "next_at": None if last else rules.next_step_at(now, job.next_wait_days or 0),
                "last_sent_at": now,
                "thread_message_id": job.thread_message_id,
                "last_message_id": job.message_id,
                "finished_at": now if last else None,
            }
            sent_boxes.append({"id": job.mailbox_id, "last_sent_at": now})
        else:
            given_back[job.mailbox_id] += 1
            send["error"] = delivery.reason[:1000]
            if outcome == "bounced":
                send |= {"sent_at": now}
                lead |= {
                    "status": "bounced",
                    "reason": f"{label} bounced: {delivery.reason}"[:200],
                    "finished_at": now,
                }
                bounced.append((job, delivery))
            elif outcome == "failed" and delivery.phase == "message":
                lead |= {  # never handed to the server: a lead that got nothing yet is skipped
                    "status": "skipped" if job.step == 0 else "stopped",
                    "reason": f"{label} was not sent: {delivery.reason}"[:200],
                    "finished_at": now,
                }
            elif outcome == "failed":
                lead |= {
                    "status": "stopped",
                    "reason": f"{label} was refused: {delivery.reason}"[:200],
                    "finished_at": now,
                }
            elif outcome == "retry":
                send["status"] = "retry"
                at = rules.retry_at(now, job.attempts)
                lead |= {
                    "reason": f"{label}: temporary failure ({delivery.reason}); retried later"[:200],
                    "next_at": at,
                    "mailbox_id": job.mailbox_id if job.step > 0 else None,
                }
            else:  # the mailbox is at fault: the lead waits for a working mailbox
                send |= {"status": "retry", "attempts": job.attempts - 1}
                broken[job.mailbox_id] = delivery.reason
                lead |= {
                    "reason": f"{label}: the mailbox could not send ({delivery.reason})"[:200],
                    "next_at": now,
                    "mailbox_id": job.mailbox_id if job.step > 0 else None,
                }
        send_updates.append(send)
        lead_updates.append(lead)
        if send["sent_at"] is not None:
            handoffs_sent[job.workspace_id].append(job.send_id)
    if not send_updates:
        return dict(counts)
    await update_each(
        ctx,
        system_scope(sends).update(),
        send_updates,
        where=lambda v: [equals_any(sends.c.status, "sending", "unknown")],
    )
    await _count_sent(ctx, handoffs_sent)
    await update_each(
        ctx,
        system_scope(campaign_leads).update(),
        lead_updates,
        types={"step_was": Integer()},
        where=lambda v: [
            campaign_leads.c.step == v["step_was"],
            # a lead that unsubscribed, replied or was removed meanwhile keeps that status; `stopped` is
            # the recovery's "outcome unknown", which the real outcome replaces
            equals_any(campaign_leads.c.status, "not_contacted", "contacted", "rescheduled", "stopped"),
        ],
        values=lambda v: {
            **{k: v[k] for k in ("status", "step", "reason", "next_at", "mailbox_id", "finished_at")},
            **{
                k: func.coalesce(v[k], campaign_leads.c[k])
                for k in ("last_sent_at", "thread_message_id", "last_message_id")
            },
        },
    )
    boxes = system_scope(mailboxes).update()
    await update_each(ctx, boxes, next_sends)
    await update_each(ctx, boxes, sent_boxes)
    await update_each(
        ctx,
        boxes,
        [{"id": k, "n": n} for k, n in given_back.items()],
        types={"n": Integer()},
        where=lambda v: [mailboxes.c.sent_count > 0],
        values=lambda v: {"sent_count": mailboxes.c.sent_count - v["n"]},
    )
    await update_each(
        ctx,
        boxes,
        [{"id": k, "status_reason": f"Sending failed: {v}"[:500]} for k, v in broken.items()],
        where=lambda v: [mailboxes.c.status == "active"],
        values=lambda v: {"status": "error", "status_reason": v["status_reason"], "updated_at": now},
    )
    for job, refusal in bounced:
        ws = as_workspace(ctx, lifecycle_principal(job.workspace_id))
        await ctx.conn.execute(
            scoped(ws, leads)
            .update()
            .where(leads.c.id == job.lead_id)
            .values(status="bounced", updated_at=now)
        )
        bounce = rules.smtp_bounce(refusal.code, refusal.reason, job.lead_email)
        data = await lead_event_data(ws, job.lead_id, send_id=job.send_id, bounce=bounce)
        await record_event(ws, "lead.bounced", data)
    for workspace_id, campaign_id in sorted({(job.workspace_id, job.campaign_id) for job, _ in bounced}):
        await check_bounce_rate(as_workspace(ctx, lifecycle_principal(workspace_id)), campaign_id)
    return dict(counts)


async def _count_sent(ctx: SystemContext, by_workspace: dict[str, list[str]]) -> None:
    """The analytics rollups of the emails handed over (sent, or refused as a bounce), per workspace."""
    for workspace_id, send_ids in sorted(by_workspace.items()):
        await count_sends(as_workspace(ctx, lifecycle_principal(workspace_id)), send_ids)


async def check_bounce_rate(ctx: WorkspaceContext, campaign_id: str) -> None:
    """Pause the running campaign (`pausedReason`, `campaign.paused`) once its bounce rate reaches the
    threshold: bounced ledger rows among those sent or bounced. Used by the sender and the inbox."""
    row = (
        await ctx.conn.execute(
            scoped(ctx, campaigns)
            .select(campaigns.c.status, campaigns.c.bounce_threshold)
            .where(campaigns.c.id == campaign_id)
        )
    ).one_or_none()
    if row is None or row.status != "running":
        return
    tally = dict(
        (
            await ctx.conn.execute(
                scoped(ctx, sends)
                .select(sends.c.status, func.count())
                .where(sends.c.campaign_id == campaign_id, sends.c.status.in_(("sent", "bounced")))
                .group_by(sends.c.status)
            )
        ).all()
    )
    bounced, resolved = int(tally.get("bounced", 0)), int(sum(tally.values()))
    if rules.bounce_threshold_reached(bounced, resolved, row.bounce_threshold):
        limit = rules.DEFAULT_BOUNCE_THRESHOLD if row.bounce_threshold is None else row.bounce_threshold
        await pause_for(
            ctx,
            campaign_id,
            f"The bounce rate reached {bounced * 100 / resolved:.1f}% ({bounced} of {resolved} emails); "
            f"the threshold is {limit:g}%.",
            "bounce_rate",
        )
