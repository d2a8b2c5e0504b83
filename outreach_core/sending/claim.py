"""The claim, the scheduling pass's last step: the chosen emails are written as they will go out, recorded in
the ledger as `sending` with their Message-ID, each mailbox's slot is reserved (its next send time and
today's count) and each campaign lead is marked in flight, in the pass's transaction. Returns the jobs to
hand to SMTP once it commits (`handoff.py`)."""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

from outreach_core.campaigns.lifecycle import lifecycle_principal
from outreach_core.campaigns.schemas import Step
from outreach_core.kernel.bulk import insert_rows, one_of, update_each
from outreach_core.kernel.context import SystemContext, as_workspace, system_scope
from outreach_core.kernel.db.tables import campaign_leads, mailboxes, sends
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.ports import MailServer
from outreach_core.mailboxes.routes import proxy_urls
from outreach_core.mailboxes.rules import local_day, sent_today
from outreach_core.sending import rules
from outreach_core.sending.handoff import Job, email_for
from outreach_core.tracking.base import tracking_base_url


class Chosen(NamedTuple):
    """A campaign lead chosen for an email in this pass: its row (with the lead's columns), the mailbox row
    that sends it, the campaign's sequence, the workspace row and the campaign row."""

    row: Any
    box: Any
    steps: Sequence[Step]
    workspace: Any
    campaign: Any


async def claim(ctx: SystemContext, chosen: Sequence[Chosen], rng: random.Random) -> list[Job]:
    """Compose the chosen emails, write them to the ledger as `sending`, reserve each mailbox's slot and
    mark each campaign lead in flight, all in this transaction."""
    if not chosen:
        return []
    now = ctx.now
    ledger = (
        await ctx.conn.execute(
            system_scope(sends)
            .select(
                sends.c.id,
                sends.c.campaign_lead_id,
                sends.c.step,
                sends.c.status,
                sends.c.attempts,
                sends.c.message_id,
            )
            .where(one_of(ctx, sends.c.campaign_lead_id, [c.row.id for c in chosen]))
        )
    ).all()
    existing = {(r.campaign_lead_id, r.step): r for r in ledger}
    delivered: dict[str, list[tuple[int, str]]] = defaultdict(list)  # campaign lead -> (step, Message-ID)
    for r in ledger:
        if r.status == "sent":
            delivered[r.campaign_lead_id].append((r.step, r.message_id))
    jobs: list[Job] = []
    inserts: list[dict[str, Any]] = []
    retries: list[dict[str, Any]] = []
    leads_in_flight: list[dict[str, Any]] = []
    boxes_used: list[dict[str, Any]] = []
    proxies = await proxy_urls(ctx, {c.box.sending_ip_id for c in chosen if c.box.sending_ip_id is not None})
    in_flight_until = now + dt.timedelta(seconds=ctx.settings.sender_stale_after_s)
    bases: dict[str, str] = {}
    for row, box, steps, workspace, campaign in chosen:
        mailbox_id = box.id
        previous = existing.get((row.id, row.step))
        if previous is not None and previous.status != "retry":
            continue  # already handed off once: never again (the unique ledger key would refuse it too)
        if row.workspace_id not in bases:
            bases[row.workspace_id] = await tracking_base_url(ctx, row.workspace_id)
        send_id = previous.id if previous is not None else new_id("snd")
        written = email_for(
            ctx.settings,
            row,
            box,
            workspace,
            steps,
            delivered[row.id],
            now,
            send_id=send_id,
            base_url=bases[row.workspace_id],
            campaign=campaign,
        )
        if written is None:
            continue  # no active variant (the checklist prevents it); the lead waits for a fix
        composed, outgoing = written
        message_id = outgoing.message_id
        thread = message_id if row.step == 0 else (row.thread_message_id or message_id)
        # An email that cannot be built is claimed like any other: `deliver` finds out, without a
        # connection, and the resolution records it in the ledger as the mailbox's or this lead's failure.
        attempts = (previous.attempts if previous is not None else 0) + 1
        values = {
            "mailbox_id": mailbox_id,
            "step_id": composed.step.id,
            "variant_id": composed.variant.id,
            "message_id": message_id,
            "to_email": row.email,
            "subject": composed.subject,
            "body_html": composed.rendered.html,
            "body_text": composed.rendered.text,
            "status": "sending",
            "error": None,
            "attempts": attempts,
            "created_at": now,
        }
        if previous is None:
            inserts.append(
                {
                    "id": send_id,
                    "workspace_id": row.workspace_id,
                    "campaign_id": row.campaign_id,
                    "campaign_lead_id": row.id,
                    "lead_id": row.lead_id,
                    "step": row.step,
                    "sent_at": None,
                    **values,
                }
            )
        else:
            retries.append({"id": send_id, **values})
        leads_in_flight.append(
            {"id": row.id, "mailbox_id": mailbox_id, "next_at": in_flight_until, "reason": None}
        )
        today = local_day(now, box.timezone)
        gap = rules.next_gap(box.min_gap_s, box.max_gap_s, rng)
        boxes_used.append(
            {
                "id": mailbox_id,
                # held while the hand-off runs; the resolution sets the gap from when it ended, so the
                # gap holds between actual deliveries however long a hand-off takes
                "next_send_at": now + gap + dt.timedelta(seconds=ctx.settings.sender_smtp_timeout_s),
                "sent_day": today.isoformat(),
                "sent_count": sent_today(box.sent_day, box.sent_count, today) + 1,
            }
        )
        jobs.append(
            Job(
                send_id=send_id,
                workspace_id=row.workspace_id,
                campaign_id=row.campaign_id,
                campaign_lead_id=row.id,
                lead_id=row.lead_id,
                lead_email=row.email,
                mailbox_id=mailbox_id,
                step=row.step,
                steps=len(steps),
                next_wait_days=steps[row.step + 1].wait_days if row.step + 1 < len(steps) else None,
                thread_message_id=thread,
                message_id=message_id,
                attempts=attempts,
                server=MailServer(
                    box.smtp_host,
                    box.smtp_port,
                    box.smtp_security,
                    box.smtp_user,
                    proxies.get(box.sending_ip_id),
                ),
                password_encrypted=box.password_encrypted,
                oauth_encrypted=box.oauth_encrypted,
                mail_from=box.email,
                email=outgoing,
                gap_s=gap.total_seconds(),
            )
        )
    by_workspace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for send in inserts:
        by_workspace[send["workspace_id"]].append(send)
    for workspace_id, rows in by_workspace.items():
        await insert_rows(
            as_workspace(ctx, lifecycle_principal(workspace_id)), sends, rows
        )  # COPY on PostgreSQL
    await update_each(ctx, system_scope(sends).update(), retries)
    await update_each(ctx, system_scope(campaign_leads).update(), leads_in_flight)
    await update_each(ctx, system_scope(mailboxes).update(), boxes_used)
    return jobs
