"""The send forecast of a campaign (`forecast_campaign`, and in the launch question and answer): the facts
read in a few set-based statements, then simulated by `forecast_rules.py` with the sender's own rules.

The reads never touch single leads in Python: the campaign's waiting leads are counted by (time zone, step,
hour their next email is due, lead status, verification, address or domain suppressed), the attached active
mailboxes by their limits. The stop rules (`campaigns/stops.py`, as the sender applies them) are applied to
each group: a group the sender would skip or stop is not counted. With `stopForCompany`, the leads whose
domain is that of a lead of the campaign that replied (campaign-lead status `replied`, as the sender's
planner looks it up) are grouped by that domain, so `is_company_domain` decides for them as for the sender.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ColumnElement, case, func, select

from outreach_core.billing.period import emails_sent_this_period
from outreach_core.billing.rules import in_force
from outreach_core.campaigns.forecast_rules import (
    LIMITS,
    Allowance,
    Facts,
    MailboxGroup,
    Outcome,
    Waiting,
    forecast,
)
from outreach_core.campaigns.schedule import campaign_day, schedule_of, zone
from outreach_core.campaigns.schemas import Forecast, ForecastDay
from outreach_core.campaigns.stops import LeadFacts, StopRules, is_company_domain, stop_reason
from outreach_core.campaigns.store import campaign_row, load_steps
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import (
    campaign_leads,
    campaign_mailboxes,
    leads,
    mailboxes,
    sends,
    suppressions,
    workspaces,
)
from outreach_core.kernel.endpoint import Outside
from outreach_core.mailboxes.rules import MailboxLimits

WAITING = ("not_contacted", "contacted", "rescheduled")
"""Campaign-lead statuses that can still get email."""
COUNTED = ("sending", "sent", "bounced", "unknown")
"""Ledger statuses that count as a first email of the day against `dailyCap` (as the sender counts them)."""


async def forecast_campaign(ctx: WorkspaceContext, id: str) -> Forecast:
    """Forecast what the campaign will send, day by day, if it runs from now on (a draft or paused campaign
    as if launched now): `days[]` with `firstEmails` and `followUps` per calendar day in the campaign's
    `timezoneFallback`, `lastFirstEmailOn` (when the last waiting lead gets its first email),
    `lastEmailOn` (when the last email of the sequence goes out) and `limitedBy[]` (what holds sending
    back: mailbox daily limits, ramp-up, the window and gaps, dailyCap, the plan's monthly emails, endOn).
    Computed with the sender's own rules (windows in each lead's time zone, limits and ramps, gaps,
    dailyCap, startOn/endOn, waitDays); it cannot know replies, bounces or other campaigns sharing the
    mailboxes. Read-only."""
    row = await campaign_row(ctx, id)
    return to_wire(forecast(await forecast_facts(ctx, row)), row)


async def forecast_facts(ctx: WorkspaceContext, row: Any) -> Facts:
    """What the simulation needs, read in set-based statements (see the module docstring)."""
    steps = await load_steps(ctx, row.id)
    schedule = schedule_of(row)
    return Facts(
        now=ctx.now,
        schedule=schedule,
        daily_cap=row.daily_cap,
        first_sent_today=await _first_emails_today(ctx, row) if row.daily_cap is not None else 0,
        wait_days=[s.wait_days for s in steps],
        mailboxes=await _mailbox_groups(ctx, row.id),
        waiting=await _waiting(ctx, row),
        allowance=await _allowance(ctx),
    )


async def prepare_launch_campaign(outside: Outside, id: str) -> Forecast:
    """The launch answer's forecast, read before the launch's write transaction begins (a read-only one
    does not hold SQLite's write lock for the time a large campaign's forecast takes); the campaign is
    forecast as if running, so before and after the launch give the same answer."""
    return await outside.read(forecast_campaign, id)


def to_wire(outcome: Outcome, row: Any) -> Forecast:
    days = [ForecastDay(date=d.isoformat(), first_emails=f, follow_ups=u) for d, f, u in outcome.days]
    found = Forecast(
        days=days,
        last_first_email_on=_day(outcome.last_first_email_on),
        last_email_on=_day(outcome.last_email_on),
        limited_by=outcome.limited_by,
        timezone=zone(row.timezone_fallback, "UTC").key,
        leads=outcome.leads,
        unfinished=outcome.unfinished,
        message="",
    )
    found.message = describe_forecast(found)
    return found


def describe_forecast(found: Forecast) -> str:
    """The forecast in one sentence for a person (the launch question and answer end with it)."""
    if found.leads == 0:
        return "Forecast: no lead is waiting for an email."
    leads = f"{found.leads:,} lead{'' if found.leads == 1 else 's'}"
    if not found.days:
        why = "; ".join(LIMITS[k] for k in found.limited_by) or "nothing can be sent"
        return f"Forecast for {leads}: nothing will be sent ({why})."
    first_on = next((d.date for d in found.days if d.first_emails), None)
    total_first = sum(d.first_emails for d in found.days)
    total_follow = sum(d.follow_ups for d in found.days)
    parts = [f"Forecast for {leads} (days in {found.timezone}):"]
    if first_on is not None:
        parts.append(f"{total_first:,} first emails from {first_on} to {found.last_first_email_on},")
    parts.append(f"{total_follow:,} follow-ups, the last email on {found.last_email_on}.")
    if found.unfinished:
        parts.append(f"{found.unfinished:,} would still be waiting for an email when sending ends.")
    if found.limited_by:
        parts.append("Held back by " + "; ".join(LIMITS[k] for k in found.limited_by) + ".")
    return " ".join(parts)


def _day(d: dt.date | None) -> str | None:
    return d.isoformat() if d is not None else None


async def _mailbox_groups(ctx: WorkspaceContext, campaign_id: str) -> list[MailboxGroup]:
    """The campaign's active mailboxes, identical ones counted together."""
    m = mailboxes.c
    columns = (
        m.daily_limit,
        m.ramp_enabled,
        m.ramp_start,
        m.ramp_increment,
        m.ramp_started_on,
        m.timezone,
        m.sent_day,
        m.sent_count,
        m.min_gap_s,
        m.max_gap_s,
    )
    rows = await ctx.conn.execute(
        scoped(ctx, campaign_mailboxes)
        .select(*columns, func.count().label("n"))
        .join(mailboxes, mailboxes.c.id == campaign_mailboxes.c.mailbox_id)
        .where(campaign_mailboxes.c.campaign_id == campaign_id, m.status == "active")
        .group_by(*columns)
        .order_by(*columns)
    )
    return [
        MailboxGroup(
            count=int(r.n),
            limits=MailboxLimits(
                r.daily_limit,
                r.ramp_enabled,
                r.ramp_start,
                r.ramp_increment,
                r.ramp_started_on,
                r.timezone,
                r.sent_day,
                r.sent_count,
            ),
            min_gap_s=r.min_gap_s,
            max_gap_s=r.max_gap_s,
        )
        for r in rows
    ]


async def _waiting(ctx: WorkspaceContext, row: Any) -> list[Waiting]:
    """The campaign's waiting leads by (time zone, step, hour due, lead status, verification), the groups the
    stop rules would skip or stop left out. A group is due at its latest `next_at`, so never too early."""
    cl = campaign_leads.c
    hour: ColumnElement[Any]
    if ctx.conn.dialect.name == "postgresql":
        hour = func.date_trunc("hour", cl.next_at)
    else:
        hour = func.substr(cl.next_at, 1, 13)  # stored as 'YYYY-MM-DD HH:MM:SS' text in UTC
    keys: list[ColumnElement[Any]] = [leads.c.timezone, cl.step, hour, leads.c.status, leads.c.verify_status]
    if await _has_suppressions(ctx):  # two index probes a lead, only when there is anything to find
        on_list = scoped(ctx, suppressions).select(suppressions.c.id)
        keys.append(on_list.where(suppressions.c.value == leads.c.email).exists().label("email_suppressed"))
        keys.append(on_list.where(suppressions.c.value == leads.c.domain).exists().label("domain_suppressed"))
    if row.stop_for_company and await _has_replied(ctx, row.id):
        # the planner's `company_replied`: a lead of this campaign at the same domain has replied
        other, person = campaign_leads.alias("replied_cl"), leads.alias("replied_lead")
        colleague = (
            select(other.c.id)
            .join(person, person.c.id == other.c.lead_id)
            .where(
                other.c.workspace_id == ctx.workspace_id,  # aliases: `scoped` takes tables
                other.c.campaign_id == row.id,
                other.c.status == "replied",
                person.c.domain == leads.c.domain,
            )
            .exists()
        )
        keys.append(case((colleague, leads.c.domain), else_=None).label("replied_domain"))
    rows = await ctx.conn.execute(
        scoped(ctx, campaign_leads)
        .select(*keys, func.max(cl.next_at).label("due"), func.count().label("n"))
        .join(leads, leads.c.id == cl.lead_id)
        .where(cl.campaign_id == row.id, cl.status.in_(WAITING))
        .group_by(*keys)
    )
    rules = StopRules(row.stop_on_reply, row.stop_for_company, row.skip_risky)
    found = []
    for r in rows:
        facts = LeadFacts(
            step=r.step,
            lead_status=r.status,
            verify_status=r.verify_status,
            email_suppressed=bool(getattr(r, "email_suppressed", False)),
            domain_suppressed=bool(getattr(r, "domain_suppressed", False)),
            company_replied=is_company_domain(getattr(r, "replied_domain", None)),
        )
        if stop_reason(facts, rules) is None:
            found.append(Waiting(r.timezone, r.step, r.due, int(r.n)))
    return found


async def _has_replied(ctx: WorkspaceContext, campaign_id: str) -> bool:
    cl = campaign_leads.c
    found = await ctx.conn.execute(
        scoped(ctx, campaign_leads)
        .select(cl.id)
        .where(cl.campaign_id == campaign_id, cl.status == "replied")
        .limit(1)
    )
    return found.first() is not None


async def _has_suppressions(ctx: WorkspaceContext) -> bool:
    found = await ctx.conn.execute(scoped(ctx, suppressions).select(suppressions.c.id).limit(1))
    return found.first() is not None


async def _first_emails_today(ctx: WorkspaceContext, row: Any) -> int:
    """First emails of the campaign's current day (its fallback time zone) that count against `dailyCap`."""
    schedule = schedule_of(row)
    tz = zone(row.timezone_fallback, "UTC")
    day_start = dt.datetime.combine(campaign_day(ctx.now, schedule), dt.time(), tzinfo=tz).astimezone(dt.UTC)
    count = (
        scoped(ctx, sends)
        .select(func.count())
        .where(
            sends.c.campaign_id == row.id,
            sends.c.step == 0,
            sends.c.created_at >= day_start,
            sends.c.status.in_(COUNTED),
        )
    )
    return int((await ctx.conn.execute(count)).scalar_one())


async def _allowance(ctx: WorkspaceContext) -> Allowance | None:
    """The plan's monthly emails left now (what the sender counts), or None without a plan in force."""
    ws = (await ctx.conn.execute(scoped(ctx, workspaces).select())).one()
    plan = in_force(ws, ctx.now)
    if plan is None:
        return None
    sent = await emails_sent_this_period(ctx, ws.plan_period_start)
    return Allowance(max(0, plan.emails_per_month - sent), plan.emails_per_month, ws.plan_period_start)
