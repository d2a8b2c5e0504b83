"""The sender's scheduling pass: one transaction that plans a batch and claims it. The SMTP hand-offs
(`handoff.py`) happen after it commits, never inside a transaction, and their outcomes are recorded in the
next one (`outcomes.py`); hand-offs lost in a crash are recovered first (`recovery.py`).

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
4. The chosen emails are written (`handoff.email_for`: `compose()`, as the preview shows) and recorded in the
   ledger as `sending` with their Message-ID; the mailbox's next send time and today's count are reserved;
   the campaign lead is marked in flight. Commit. Then the hand-offs (`handoff.deliver`), then
   `outcomes.resolve_batch`.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy import ColumnElement, Table, func, or_

from outreach_core.billing.period import emails_sent_this_period
from outreach_core.billing.rules import in_force
from outreach_core.campaigns.compose import RENDERED_FIELDS
from outreach_core.campaigns.lifecycle import lifecycle_principal, pause_for
from outreach_core.campaigns.schedule import (
    Schedule,
    campaign_day,
    ended,
    in_window,
    not_started,
    schedule_of,
    window_opens,
    zone,
)
from outreach_core.campaigns.schemas import Step
from outreach_core.campaigns.stops import is_company_domain
from outreach_core.campaigns.store import load_steps
from outreach_core.kernel.bulk import one_of, update_each
from outreach_core.kernel.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    system_scope,
)
from outreach_core.kernel.db.tables import (
    campaign_leads,
    campaign_mailboxes,
    campaigns,
    leads,
    mailboxes,
    sends,
    suppressions,
    workspaces,
)
from outreach_core.sending import rules
from outreach_core.sending.claim import Chosen, claim
from outreach_core.sending.handoff import Job
from outreach_core.sending.outcomes import finish_leads
from outreach_core.sending.recovery import recover_lost_sends

_log = structlog.get_logger()

FOLLOW_UP_CANDIDATES = 3
"""Due follow-ups looked at per mailbox and pass (more wait for the next pass)."""
COUNTED = ("sending", "sent", "bounced", "unknown")
"""Ledger statuses that count as an email of the day (dailyCap) or month (plan)."""


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
                    mailboxes.c.sending_route != "waiting",  # no sending IP has room for it yet
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
    jobs = await claim(ctx, planner.chosen(), planner.rng)
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
        self.schedules: dict[str, Schedule] = {}  # campaign -> its schedule, read once a pass
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
                .where(
                    campaigns.c.status == "running",
                    one_of(ctx, campaign_mailboxes.c.mailbox_id, list(self.boxes)),
                )
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
        plan = in_force(w, self.now)  # a plan cancelled at its period's end stops at renewsAt
        if plan is None:
            return 0
        # the same count `/me` reports as emailsSentThisPeriod
        sent = await emails_sent_this_period(self.ws_ctx(w.id), w.plan_period_start)
        return max(0, plan.emails_per_month - sent)

    async def _first_emails_left(self, c: Any) -> int | None:
        if c.daily_cap is None:
            return None
        schedule = schedule_of(c)
        day = campaign_day(self.now, schedule)
        tz = zone(c.timezone_fallback, "UTC")
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
            schedule = schedule_of(c)
            if ended(self.now, schedule):
                await pause_for(
                    self.ws_ctx(c.workspace_id), cid, f"The last sending day ({c.end_on}) has passed."
                )
                paused += 1
                self._drop_campaign(cid)
            elif not_started(self.now, schedule) or not self.steps.get(cid):
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
                one_of(self.ctx, campaign_leads.c.mailbox_id, senders),
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
                *(leads.c[f] for f in RENDERED_FIELDS),
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
            schedule = self._schedule(c)
            if not in_window(self.now, r.timezone, schedule):
                later.append({"id": r.id, "next_at": window_opens(self.now, r.timezone, schedule)})
                continue
            keep.append(r)
        await finish_leads(self.ctx, stops)
        await update_each(self.ctx, system_scope(campaign_leads).update(), later)
        self.changed += len(stops) + len(later)
        return keep

    def _schedule(self, c: Any) -> Schedule:
        found = self.schedules.get(c.id)
        if found is None:
            found = self.schedules[c.id] = schedule_of(c)
        return found

    def _final(self, r: Any, status: str, reason: str | None) -> dict[str, Any]:
        return {"id": r.id, "status": status, "reason": reason, "finished_at": self.now, "next_at": None}

    async def _suppressed(self, rows: Sequence[Any]) -> set[tuple[str, str]]:
        values = sorted({r.email for r in rows} | {r.domain for r in rows})
        ws_ids = sorted({r.workspace_id for r in rows})
        found = await self.ctx.conn.execute(
            system_scope(suppressions)
            .select(suppressions.c.workspace_id, suppressions.c.value)
            .where(suppressions.c.workspace_id.in_(ws_ids), one_of(self.ctx, suppressions.c.value, values))
        )
        return {(w, v) for w, v in found.all()}

    async def _company_replies(self, rows: Sequence[Any]) -> set[tuple[str, str]]:
        wanted: dict[str, set[str]] = defaultdict(set)
        for r in rows:
            if self.campaigns[r.campaign_id].stop_for_company and is_company_domain(r.domain):
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

    def chosen(self) -> list[Chosen]:
        """The campaign leads chosen in this pass, each with its mailbox, sequence, workspace and campaign."""
        return [
            Chosen(
                row,
                self.rows[mailbox_id],
                self.steps[row.campaign_id],
                self.workspace[row.workspace_id],
                self.campaigns[row.campaign_id],
            )
            for row, mailbox_id in self.pairs
        ]

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
