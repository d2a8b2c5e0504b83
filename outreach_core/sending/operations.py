"""The sender's database work: one scheduling pass that plans and claims a batch, the resolution of the
hand-offs, and the recovery of hand-offs lost in a crash. The SMTP hand-off itself happens between the two
transactions (`deliver`), never inside one.

The pass works across workspaces (one set of indexed queries for every due mailbox), so this module is on
the architecture test's `system_scope` allow-list; anything that belongs to one workspace (pausing a
campaign, events, the sequence) runs through that workspace's own context in the same transaction.

A batch, step by step (docs/sending.md):

1. `sending` ledger rows older than `sender_stale_after_s` become `unknown` (never repeated).
2. Due mailboxes (active, `next_send_at` passed, attached to a running campaign) are locked (`FOR UPDATE
   SKIP LOCKED` on PostgreSQL, so several workers share them); full ones sleep until their next local day.
3. Each free mailbox takes its next due follow-up (same mailbox, `waitDays` passed), else a first email of a
   campaign it sends for (spread by `assign_mailbox`, `espMatching`, `dailyCap`, the plan's monthly
   emails), after the stop rules and the lead's window. Leads outside their window get `next_at` = when it
   opens; stopped leads get their final status.
4. The chosen emails are composed (`compose()`, as the preview shows) and written to the ledger as
   `sending` with their Message-ID; the mailbox's next send time and today's count are reserved; the
   campaign lead is marked in flight. Commit. Then the hand-offs, then `resolve_batch`.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy import ColumnElement, Integer, Table, func, or_

from outreach_core.billing.period import emails_sent_this_period
from outreach_core.bulk import equals_any, update_each
from outreach_core.campaigns.compose import LEAD_FIELDS, compose
from outreach_core.campaigns.lifecycle import lifecycle_principal, pause_for
from outreach_core.campaigns.links import unsubscribe_url
from outreach_core.campaigns.operations import load_steps
from outreach_core.campaigns.rendering import Sender, Unsubscribe
from outreach_core.campaigns.schemas import Step
from outreach_core.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    insert_rows,
    scoped,
    system_scope,
)
from outreach_core.crypto import UndecryptableSecret, decrypt
from outreach_core.db.tables import (
    campaign_leads,
    campaign_mailboxes,
    campaigns,
    leads,
    mailboxes,
    sends,
    suppressions,
    workspaces,
)
from outreach_core.event_data import lead_event_data, smtp_bounce
from outreach_core.ids import new_id
from outreach_core.mailboxes.rules import local_day, sent_today
from outreach_core.outbox import record_event
from outreach_core.ports import Delivery, MailSender, MailServer
from outreach_core.sending import rules
from outreach_core.sending.message import Outgoing, UnsafeHeader, build_message, new_message_id, to_bytes
from outreach_core.sending.recovery import recover_lost_sends

_log = structlog.get_logger()

FOLLOW_UP_CANDIDATES = 3
"""Due follow-ups looked at per mailbox and pass (more wait for the next pass)."""
COUNTED = ("sending", "sent", "bounced", "unknown")
"""Ledger statuses that count as an email of the day (dailyCap) or month (plan)."""
BILLABLE_PLAN_STATUSES = ("active", "trialing")


@dataclass(frozen=True)
class Job:
    """One claimed email: everything the hand-off and its resolution need."""

    send_id: str
    workspace_id: str
    campaign_id: str
    campaign_lead_id: str
    lead_id: str
    lead_email: str
    mailbox_id: str
    step: int  # position of the step being sent
    steps: int  # steps in the sequence
    next_wait_days: int | None  # waitDays of the next step; None after the last
    thread_message_id: str  # the first email's Message-ID (this one's, for the first email)
    message_id: str
    attempts: int
    server: MailServer
    password_encrypted: str
    mail_from: str
    email: Outgoing  # turned into bytes just before the hand-off, outside the pass's transaction
    gap_s: float  # the mailbox waits this long after the hand-off before its next send


@dataclass(frozen=True)
class Handoff:
    """One job's hand-off: its outcome and when it ended (the mailbox's gap counts from then)."""

    job: Job
    delivery: Delivery
    ended_at: dt.datetime


@dataclass(frozen=True)
class Batch:
    jobs: list[Job]
    changed: int  # campaign leads stopped or moved to their window, mailboxes put to sleep, campaigns paused


# --- the scheduling pass -----------------------------------------------------------------------------------


def _lock(stmt: Any, ctx: SystemContext, *of: Table) -> Any:
    """`FOR UPDATE SKIP LOCKED` on PostgreSQL (workers share the rows); SQLite runs one sender."""
    if ctx.conn.dialect.name == "postgresql":
        return stmt.with_for_update(skip_locked=True, of=list(of) if of else None)
    return stmt


def _running_for(mailbox_id: ColumnElement[str]) -> Any:
    return (
        system_scope(campaign_mailboxes)
        .select(campaign_mailboxes.c.mailbox_id)
        .join(campaigns, campaigns.c.id == campaign_mailboxes.c.campaign_id)
        .where(campaign_mailboxes.c.mailbox_id == mailbox_id, campaigns.c.status == "running")
        .exists()
    )


async def plan_batch(
    ctx: SystemContext, *, limit: int | None = None, rng: random.Random | None = None
) -> Batch:
    """One scheduling pass: claim at most one email per due mailbox (see the module docstring) and write
    the claimed emails to the ledger as `sending`. Returns the jobs to hand to SMTP."""
    now = ctx.now
    changed = await recover_lost_sends(ctx)
    limit = limit or ctx.settings.sender_batch_mailboxes
    m = system_scope(mailboxes)
    due_rows = (
        await ctx.conn.execute(
            _lock(
                m.select()
                .where(
                    mailboxes.c.status == "active",
                    or_(mailboxes.c.next_send_at.is_(None), mailboxes.c.next_send_at <= now),
                    _running_for(mailboxes.c.id),
                )
                .order_by(mailboxes.c.next_send_at.is_not(None), mailboxes.c.next_send_at, mailboxes.c.id)
                .limit(limit),
                ctx,
                mailboxes,
            )
        )
    ).all()
    if not due_rows:
        return Batch([], changed)
    boxes: dict[str, Any] = {}
    asleep: list[dict[str, Any]] = []
    for r in due_rows:
        limits = rules.MailboxLimits(
            r.daily_limit,
            r.ramp_enabled,
            r.ramp_start,
            r.ramp_increment,
            r.ramp_started_on,
            r.timezone,
            r.sent_day,
            r.sent_count,
        )
        if rules.sends_left(limits, now) > 0:
            boxes[r.id] = r
        else:
            asleep.append({"id": r.id, "next_send_at": rules.next_local_midnight(now, r.timezone)})
    await update_each(ctx, system_scope(mailboxes).update(), asleep)
    changed += len(asleep)
    if not boxes:
        return Batch([], changed)

    planner = _Planner(ctx, boxes, rng or random.Random())
    await planner.load_campaigns()
    changed += await planner.pause_ended()
    await planner.pick_follow_ups()
    await planner.pick_first_emails()
    jobs = await planner.claim()
    await planner.nap_idle()
    return Batch(jobs, changed + planner.changed)


class _Planner:
    """The state of one pass (see `plan_batch`)."""

    def __init__(self, ctx: SystemContext, boxes: dict[str, Any], rng: random.Random) -> None:
        self.ctx = ctx
        self.now = ctx.now
        self.boxes = dict(boxes)  # mailboxes still free in this pass: id -> row
        self.rows = dict(boxes)  # every mailbox of the pass (the claim needs the taken ones)
        self.rng = rng
        self.campaigns: dict[str, Any] = {}
        self.attached: dict[str, list[str]] = defaultdict(list)  # campaign -> due mailboxes attached
        self.active: dict[str, list[str]] = defaultdict(list)  # campaign -> every active attached mailbox
        self.by_mailbox: dict[str, list[str]] = defaultdict(list)  # mailbox -> running campaigns
        self.steps: dict[str, list[Step]] = {}
        self.workspace: dict[str, Any] = {}
        self.allowance: dict[str, int] = {}  # workspace -> emails left this month (plan)
        self.first_left: dict[str, int | None] = {}  # campaign -> first emails left today (dailyCap)
        self.pairs: list[tuple[Any, str]] = []  # (campaign lead + lead row, mailbox id)
        self.changed = 0

    def ws_ctx(self, workspace_id: str) -> WorkspaceContext:
        return as_workspace(self.ctx, lifecycle_principal(workspace_id))

    async def load_campaigns(self) -> None:
        ctx = self.ctx
        links = (
            await ctx.conn.execute(
                system_scope(campaign_mailboxes)
                .select(campaign_mailboxes.c.campaign_id, campaign_mailboxes.c.mailbox_id)
                .join(campaigns, campaigns.c.id == campaign_mailboxes.c.campaign_id)
                .where(campaigns.c.status == "running", campaign_mailboxes.c.mailbox_id.in_(list(self.boxes)))
            )
        ).all()
        for link in links:
            self.attached[link.campaign_id].append(link.mailbox_id)
            self.by_mailbox[link.mailbox_id].append(link.campaign_id)
        ids = sorted(self.attached)
        rows = (await ctx.conn.execute(system_scope(campaigns).select().where(campaigns.c.id.in_(ids)))).all()
        self.campaigns = {r.id: r for r in rows}
        for link in (
            await ctx.conn.execute(
                system_scope(campaign_mailboxes)
                .select(campaign_mailboxes.c.campaign_id, campaign_mailboxes.c.mailbox_id)
                .join(mailboxes, mailboxes.c.id == campaign_mailboxes.c.mailbox_id)
                .where(campaign_mailboxes.c.campaign_id.in_(ids), mailboxes.c.status == "active")
            )
        ).all():
            self.active[link.campaign_id].append(link.mailbox_id)
        ws_ids = sorted({r.workspace_id for r in rows})
        for w in (
            await ctx.conn.execute(system_scope(workspaces).select().where(workspaces.c.id.in_(ws_ids)))
        ).all():
            self.workspace[w.id] = w
            self.allowance[w.id] = await self._month_allowance(w)
        for r in rows:
            self.steps[r.id] = await load_steps(self.ws_ctx(r.workspace_id), r.id)
            self.first_left[r.id] = await self._first_emails_left(r)

    async def _month_allowance(self, w: Any) -> int:
        from outreach_core.billing.rules import PLANS

        plan = PLANS.get(w.plan or "")
        if plan is None or w.plan_status not in BILLABLE_PLAN_STATUSES:
            return 0
        # the same count `/me` reports as emailsSentThisPeriod
        sent = await emails_sent_this_period(self.ws_ctx(w.id), w.plan_period_start)
        return max(0, plan.emails_per_month - sent)

    async def _first_emails_left(self, c: Any) -> int | None:
        if c.daily_cap is None:
            return None
        schedule = _schedule(c)
        day = rules.campaign_day(self.now, schedule)
        tz = rules.zone(c.timezone_fallback, "UTC")
        day_start = dt.datetime.combine(day, dt.time(), tzinfo=tz).astimezone(dt.UTC)
        done = (
            await self.ctx.conn.execute(
                system_scope(sends)
                .select(func.count())
                .where(
                    sends.c.campaign_id == c.id,
                    sends.c.step == 0,
                    sends.c.created_at >= day_start,
                    sends.c.status.in_(COUNTED),
                )
            )
        ).scalar_one()
        return max(0, int(c.daily_cap) - int(done))

    async def pause_ended(self) -> int:
        """Campaigns past `endOn` pause now (the `campaigns` worker would within a minute); others not yet
        at `startOn` send nothing this pass."""
        paused = 0
        for cid, c in list(self.campaigns.items()):
            schedule = _schedule(c)
            if rules.ended(self.now, schedule):
                await pause_for(
                    self.ws_ctx(c.workspace_id), cid, f"The last sending day ({c.end_on}) has passed."
                )
                paused += 1
                self._drop_campaign(cid)
            elif rules.not_started(self.now, schedule) or not self.steps.get(cid):
                self._drop_campaign(cid)
        return paused

    def _drop_campaign(self, cid: str) -> None:
        self.campaigns.pop(cid, None)
        for mailbox_id in self.attached.pop(cid, []):
            self.by_mailbox[mailbox_id] = [c for c in self.by_mailbox[mailbox_id] if c != cid]

    # -- follow-ups ------------------------------------------------------------------------------------------

    async def pick_follow_ups(self) -> None:
        """Each free mailbox's next due follow-up (`next_at` passed, in one of its running campaigns)."""
        senders = sorted(m for m, cids in self.by_mailbox.items() if cids)
        if not senders:
            return
        # One statement for every mailbox: the first few due follow-ups of each (window function over the
        # mailbox's index range), then the rows themselves, locked.
        ranked = (
            system_scope(campaign_leads)
            .select(
                campaign_leads.c.id,
                func.row_number()
                .over(partition_by=campaign_leads.c.mailbox_id, order_by=campaign_leads.c.next_at)
                .label("rn"),
            )
            .where(
                campaign_leads.c.mailbox_id.in_(senders),
                campaign_leads.c.status.in_(("contacted", "rescheduled")),
                campaign_leads.c.next_at <= self.now,
            )
            .subquery()
        )
        first_few = (
            system_scope(campaign_leads).select(ranked.c.id).where(ranked.c.rn <= FOLLOW_UP_CANDIDATES)
        )
        found = (
            await self.ctx.conn.execute(
                _lock(self._candidates().where(campaign_leads.c.id.in_(first_few)), self.ctx, campaign_leads)
            )
        ).all()
        rows = sorted(
            (r for r in found if r.campaign_id in self.by_mailbox[r.mailbox_id]), key=lambda r: r.next_at
        )
        sendable = await self._screen(rows)
        for row in sendable:
            mailbox_id = row.mailbox_id
            if mailbox_id not in self.boxes or self.allowance[row.workspace_id] <= 0:
                continue
            self._take(row, mailbox_id)

    def _candidates(self) -> Any:
        return (
            system_scope(campaign_leads)
            .select(
                campaign_leads.c.id,
                campaign_leads.c.workspace_id,
                campaign_leads.c.campaign_id,
                campaign_leads.c.lead_id,
                campaign_leads.c.step,
                campaign_leads.c.mailbox_id,
                campaign_leads.c.thread_message_id,
                campaign_leads.c.next_at,
                leads.c.domain,
                leads.c.esp,
                leads.c.status.label("lead_status"),
                leads.c.verify_status,
                *(leads.c[f] for f in LEAD_FIELDS),
            )
            .join(leads, leads.c.id == campaign_leads.c.lead_id)
        )

    def _take(self, row: Any, mailbox_id: str) -> None:
        self.boxes.pop(mailbox_id)
        self.allowance[row.workspace_id] -= 1
        self.pairs.append((row, mailbox_id))

    # -- first emails ----------------------------------------------------------------------------------------

    async def pick_first_emails(self) -> None:
        """First emails for the mailboxes still free, campaign by campaign (in random order, so a mailbox
        shared by several campaigns serves them all)."""
        order = list(self.attached)
        self.rng.shuffle(order)
        for cid in order:
            c = self.campaigns[cid]
            free = [mb for mb in self.attached[cid] if mb in self.boxes]
            cap = self.first_left[cid]
            room = min(len(free), self.allowance[c.workspace_id], cap if cap is not None else len(free))
            if room <= 0:
                continue
            # a few spare candidates for the stop rules, closed windows and `espMatching` to choose among;
            # a mailbox left without one waits for the next pass (a second later)
            want = room + room // 4 + 5
            rows = await self._first_candidates(cid, want)
            sendable = await self._screen(rows)
            families = {
                mb: rules.mailbox_family(self.boxes[mb].provider, self.boxes[mb].smtp_host) for mb in free
            }
            by_key = {r.id: r for r in sendable}
            pairs = rules.spread_first_emails(
                [rules.Candidate(r.id, r.lead_id, r.esp) for r in sendable],
                free,
                sorted(self.active[cid]),
                families,
                esp_matching=c.esp_matching,
            )
            for key, mailbox_id in pairs[:room]:
                self._take(by_key[key], mailbox_id)
                if cap is not None:
                    self.first_left[cid] = (self.first_left[cid] or 0) - 1

    async def _first_candidates(self, cid: str, want: int) -> list[Any]:
        fresh = (
            await self.ctx.conn.execute(
                _lock(
                    self._candidates()
                    .where(
                        campaign_leads.c.campaign_id == cid,
                        campaign_leads.c.status == "not_contacted",
                        campaign_leads.c.next_at.is_(None),
                    )
                    # `next_at` (NULL throughout) makes the order the due index's own: ordered by id alone,
                    # PostgreSQL walks the primary key past every lead already claimed, slower each pass
                    .order_by(campaign_leads.c.next_at, campaign_leads.c.id)
                    .limit(want),
                    self.ctx,
                    campaign_leads,
                )
            )
        ).all()
        waited = (
            await self.ctx.conn.execute(
                _lock(
                    self._candidates()
                    .where(
                        campaign_leads.c.campaign_id == cid,
                        campaign_leads.c.status.in_(("not_contacted", "rescheduled")),
                        campaign_leads.c.next_at <= self.now,
                        or_(campaign_leads.c.step == 0, campaign_leads.c.mailbox_id.is_(None)),
                    )
                    .order_by(campaign_leads.c.next_at)
                    .limit(want),
                    self.ctx,
                    campaign_leads,
                )
            )
        ).all()
        # follow-ups whose mailbox was deleted (`mailbox_id` set null) continue from another mailbox
        orphans = (
            await self.ctx.conn.execute(
                _lock(
                    self._candidates()
                    .where(
                        campaign_leads.c.mailbox_id.is_(None),
                        campaign_leads.c.status.in_(("contacted", "rescheduled")),
                        campaign_leads.c.next_at <= self.now,
                        campaign_leads.c.campaign_id == cid,
                    )
                    .order_by(campaign_leads.c.next_at)
                    .limit(want),
                    self.ctx,
                    campaign_leads,
                )
            )
        ).all()
        return list(orphans) + list(waited) + list(fresh)

    # -- stop rules and windows ------------------------------------------------------------------------------

    async def _screen(self, rows: Sequence[Any]) -> list[Any]:
        """The rows that may get their email now. The others get their final status (stop rules) or
        `next_at` = when their window opens, in bulk."""
        if not rows:
            return []
        suppressed = await self._suppressed(rows)
        replied = await self._company_replies(rows)
        stops: list[dict[str, Any]] = []
        later: list[dict[str, Any]] = []
        keep: list[Any] = []
        for r in rows:
            c = self.campaigns[r.campaign_id]
            if r.step >= len(self.steps[r.campaign_id]):
                stops.append(self._final(r, "completed", None))
                continue
            facts = rules.LeadFacts(
                step=r.step,
                lead_status=r.lead_status,
                verify_status=r.verify_status,
                email_suppressed=(r.workspace_id, r.email) in suppressed,
                domain_suppressed=(r.workspace_id, r.domain) in suppressed,
                company_replied=(r.campaign_id, r.domain) in replied,
            )
            stop = rules.stop_reason(
                facts, rules.StopRules(c.stop_on_reply, c.stop_for_company, c.skip_risky)
            )
            if stop is not None:
                stops.append(self._final(r, *stop))
                continue
            schedule = _schedule(c)
            if not rules.in_window(self.now, r.timezone, schedule):
                later.append({"id": r.id, "next_at": rules.window_opens(self.now, r.timezone, schedule)})
                continue
            keep.append(r)
        await _finish_leads(self.ctx, stops)
        await update_each(self.ctx, system_scope(campaign_leads).update(), later)
        self.changed += len(stops) + len(later)
        return keep

    def _final(self, r: Any, status: str, reason: str | None) -> dict[str, Any]:
        return {"id": r.id, "status": status, "reason": reason, "finished_at": self.now, "next_at": None}

    async def _suppressed(self, rows: Sequence[Any]) -> set[tuple[str, str]]:
        values = sorted({r.email for r in rows} | {r.domain for r in rows})
        ws_ids = sorted({r.workspace_id for r in rows})
        found = await self.ctx.conn.execute(
            system_scope(suppressions)
            .select(suppressions.c.workspace_id, suppressions.c.value)
            .where(suppressions.c.workspace_id.in_(ws_ids), suppressions.c.value.in_(values))
        )
        return {(w, v) for w, v in found.all()}

    async def _company_replies(self, rows: Sequence[Any]) -> set[tuple[str, str]]:
        wanted: dict[str, set[str]] = defaultdict(set)
        for r in rows:
            if self.campaigns[r.campaign_id].stop_for_company and rules.is_company_domain(r.domain):
                wanted[r.campaign_id].add(r.domain)
        found: set[tuple[str, str]] = set()
        for cid, domains in wanted.items():
            result = await self.ctx.conn.execute(
                system_scope(campaign_leads)
                .select(leads.c.domain)
                .join(leads, leads.c.id == campaign_leads.c.lead_id)
                .where(
                    campaign_leads.c.campaign_id == cid,
                    campaign_leads.c.status == "replied",
                    leads.c.domain.in_(sorted(domains)),
                )
                .distinct()
            )
            found |= {(cid, d) for d in result.scalars().all()}
        return found

    # -- the claim -------------------------------------------------------------------------------------------

    async def claim(self) -> list[Job]:
        """Compose the chosen emails, write them to the ledger as `sending`, reserve each mailbox's slot and
        mark each campaign lead in flight, all in this transaction."""
        if not self.pairs:
            return []
        ctx = self.ctx
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
                .where(sends.c.campaign_lead_id.in_([row.id for row, _ in self.pairs]))
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
        in_flight_until = self.now + dt.timedelta(seconds=ctx.settings.sender_stale_after_s)
        for row, mailbox_id in self.pairs:
            box = self._box(mailbox_id)
            previous = existing.get((row.id, row.step))
            if previous is not None and previous.status != "retry":
                continue  # already handed off once: never again (the unique ledger key would refuse it too)
            steps = self.steps[row.campaign_id]
            w = self.workspace[row.workspace_id]
            url = unsubscribe_url(
                ctx.settings, workspace_id=row.workspace_id, lead_id=row.lead_id, campaign_id=row.campaign_id
            )
            composed = compose(
                steps,
                row.step,
                lead_id=row.lead_id,
                lead={f: getattr(row, f) for f in LEAD_FIELDS},
                sender=Sender(name=box.display_name, email=box.email, signature=box.signature),
                unsubscribe=Unsubscribe(
                    mode=w.unsubscribe_mode, url=url if w.unsubscribe_mode == "link" else None
                ),
            )
            if composed is None:
                continue  # no active variant (the checklist prevents it); the lead waits for a fix
            message_id = new_message_id(box.domain)
            thread = message_id if row.step == 0 else (row.thread_message_id or message_id)
            threaded = row.step > 0 and composed.step.same_thread and row.thread_message_id is not None
            chain = _thread_chain(row.thread_message_id, delivered[row.id], steps) if threaded else []
            outgoing = Outgoing(
                from_email=box.email,
                from_name=box.display_name,
                to_email=row.email,
                subject=composed.subject,
                html=composed.rendered.html,
                text=composed.rendered.text,
                message_id=message_id,
                date=self.now,
                unsubscribe_url=url if w.unsubscribe_mode == "link" else None,
                in_reply_to=chain[-1] if chain else None,
                references=tuple(chain),
            )
            # An email that cannot be built is claimed like any other: `deliver` finds out, without a
            # connection, and the resolution records it in the ledger as the mailbox's or this lead's failure.
            attempts = (previous.attempts if previous is not None else 0) + 1
            send_id = previous.id if previous is not None else new_id("snd")
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
                "created_at": self.now,
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
            today = local_day(self.now, box.timezone)
            gap = rules.next_gap(box.min_gap_s, box.max_gap_s, self.rng)
            boxes_used.append(
                {
                    "id": mailbox_id,
                    # held while the hand-off runs; the resolution sets the gap from when it ended, so the
                    # gap holds between actual deliveries however long a hand-off takes
                    "next_send_at": self.now + gap + dt.timedelta(seconds=ctx.settings.sender_smtp_timeout_s),
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
                    server=MailServer(box.smtp_host, box.smtp_port, box.smtp_security, box.smtp_user),
                    password_encrypted=box.password_encrypted,
                    mail_from=box.email,
                    email=outgoing,
                    gap_s=gap.total_seconds(),
                )
            )
        by_workspace: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for send in inserts:
            by_workspace[send["workspace_id"]].append(send)
        for workspace_id, rows in by_workspace.items():
            await insert_rows(self.ws_ctx(workspace_id), sends, rows)  # COPY on PostgreSQL
        await update_each(ctx, system_scope(sends).update(), retries)
        await update_each(ctx, system_scope(campaign_leads).update(), leads_in_flight)
        await update_each(ctx, system_scope(mailboxes).update(), boxes_used)
        return jobs

    async def nap_idle(self) -> None:
        """Mailboxes that found nothing to send are looked at again after `sender_idle_nap_s`, so an idle
        pass does not query every mailbox's leads every second."""
        nap = self.ctx.settings.sender_idle_nap_s
        if nap <= 0 or not self.boxes:
            return
        at = self.now + dt.timedelta(seconds=nap)
        await update_each(
            self.ctx, system_scope(mailboxes).update(), [{"id": k, "next_send_at": at} for k in self.boxes]
        )

    def _box(self, mailbox_id: str) -> Any:
        return self.rows[mailbox_id]


async def _finish_leads(ctx: SystemContext, finals: list[dict[str, Any]]) -> None:
    """Campaign leads that got their final status (`_Planner._final` rows)."""
    await update_each(ctx, system_scope(campaign_leads).update(), finals)


def _thread_chain(thread_start: str, delivered: list[tuple[int, str]], steps: Sequence[Step]) -> list[str]:
    """The Message-IDs of a lead's thread, oldest first (RFC 5322 `References`): the first email and every
    same-thread follow-up delivered since. A follow-up answers the last of them (`In-Reply-To`)."""
    chain = [
        message_id
        for step, message_id in sorted(delivered)
        if step == 0 or (step < len(steps) and steps[step].same_thread)
    ]
    if thread_start not in chain:
        chain.insert(0, thread_start)
    return chain


def _schedule(c: Any) -> rules.Schedule:
    return rules.Schedule(
        timezone_fallback=c.timezone_fallback,
        window_start=c.window_start,
        window_end=c.window_end,
        days=c.days,
        start_on=c.start_on,
        end_on=c.end_on,
    )


# --- the hand-off ------------------------------------------------------------------------------------------


async def deliver(job: Job, smtp: MailSender, settings: Any) -> Delivery:
    """Hand one claimed email to its mailbox's SMTP server (no transaction is open)."""
    try:
        password = decrypt(settings, job.password_encrypted)
    except UndecryptableSecret:
        return Delivery(
            ok=False,
            phase="credentials",
            reason="the stored password cannot be decrypted with the configured keys; send it again",
        )
    try:
        message = to_bytes(build_message(job.email))
    except UnsafeHeader as exc:
        if exc.mailbox:  # the mailbox's own value (display name ...) would break every email: the mailbox's
            return Delivery(
                ok=False,
                phase="sender",
                reason=f"the email could not be built: {exc.reason}; correct it (update_mailbox), then "
                "test the mailbox again (retest_mailbox)",
            )
        return Delivery(ok=False, phase="message", reason=f"the email could not be built: {exc.reason}")
    except Exception:  # anything else the email package refuses: this email's
        _log.exception("sender_message_unbuildable", send_id=job.send_id)
        return Delivery(ok=False, phase="message", reason="the email could not be built")
    return await smtp.send(job.server, password, job.mail_from, job.lead_email, message)


# --- resolution --------------------------------------------------------------------------------------------


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
    if not send_updates:
        return dict(counts)
    await update_each(
        ctx,
        system_scope(sends).update(),
        send_updates,
        where=lambda v: [equals_any(sends.c.status, "sending", "unknown")],
    )
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
        bounce = smtp_bounce(refusal.code, refusal.reason, job.lead_email)
        data = await lead_event_data(ws, job.lead_id, send_id=job.send_id, bounce=bounce)
        await record_event(ws, "lead.bounced", data)
    for workspace_id, campaign_id in sorted({(job.workspace_id, job.campaign_id) for job, _ in bounced}):
        await _check_bounce_rate(as_workspace(ctx, lifecycle_principal(workspace_id)), campaign_id)
    return dict(counts)


async def _check_bounce_rate(ctx: WorkspaceContext, campaign_id: str) -> None:
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
