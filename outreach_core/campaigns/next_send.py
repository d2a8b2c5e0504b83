"""When a campaign's next email can go out: what the launch answer (and its confirmation) tells the person.

The sender sends to a waiting lead only inside the campaign's window on an allowed day in the lead's own time
zone (the campaign's `timezoneFallback` for leads without one), not before `startOn` and, for a follow-up,
not before its `waitDays` are over (`next_at`). The earliest such moment over the waiting leads is when
sending starts. Mailbox gaps, daily limits and the plan's monthly emails can only make it later; they are
not counted here.

Bounded, whatever the campaign's size: the time zones of at most `SAMPLE` leads that could get an email
now (`next_at` null or passed), read as ranges of the campaign-lead due index `(campaign_id, status,
next_at)`; when none can, the `SAMPLE` leads whose next email is due first, per waiting status, in that
index's order. A campaign with more leads than that is judged on a sample of them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from outreach_core.campaigns.schedule import in_window, schedule_of, window_opens, zone
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_leads, leads

WAITING = ("not_contacted", "contacted", "rescheduled")
SAMPLE = 1_000
_DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True)
class NextSend:
    at: dt.datetime  # UTC; the moment asked about when a lead can get an email right away
    now: bool  # some waiting lead can get an email right away
    timezone: str  # the time zone of the lead whose email can go first


async def next_send(ctx: WorkspaceContext, row: Any) -> NextSend | None:
    """When the first of the campaign's waiting leads can get its next email (see the module docstring);
    None when no lead waits."""
    schedule = schedule_of(row)
    start = ctx.now
    if row.start_on:
        fallback = zone(row.timezone_fallback, "UTC")
        first_day = dt.datetime.combine(dt.date.fromisoformat(row.start_on), dt.time(), tzinfo=fallback)
        start = max(start, first_day.astimezone(dt.UTC))
    base = (
        scoped(ctx, campaign_leads)
        .select(campaign_leads.c.next_at, leads.c.timezone)
        .join(leads, leads.c.id == campaign_leads.c.lead_id)
        .where(campaign_leads.c.campaign_id == row.id)
    )
    zones: set[str | None] = set()
    read = 0
    for status in WAITING:  # leads that could get an email now: two index ranges per status
        for due in (campaign_leads.c.next_at.is_(None), campaign_leads.c.next_at <= ctx.now):
            if read < SAMPLE:
                rows = (
                    await ctx.conn.execute(
                        base.where(campaign_leads.c.status == status, due).limit(SAMPLE - read)
                    )
                ).all()
                read += len(rows)
                zones.update(r.timezone for r in rows)
    candidates: list[tuple[dt.datetime, str | None]] = [(start, tz) for tz in zones]
    if not candidates:
        later: list[tuple[dt.datetime, str | None]] = []
        for status in WAITING:  # one index range each, in due order
            rows = await ctx.conn.execute(
                base.where(campaign_leads.c.status == status, campaign_leads.c.next_at > ctx.now)
                .order_by(campaign_leads.c.next_at)
                .limit(SAMPLE)
            )
            later += [(max(start, r.next_at), r.timezone) for r in rows]
        candidates = sorted(later, key=lambda c: c[0])[:SAMPLE]
    best: NextSend | None = None
    for when, lead_zone in candidates:
        tz = zone(lead_zone, schedule.timezone_fallback)
        opens = when if in_window(when, lead_zone, schedule) else window_opens(when, lead_zone, schedule)
        if best is None or opens < best.at:
            best = NextSend(at=opens, now=opens <= ctx.now, timezone=tz.key)
    return best


def describe_next_send(found: NextSend | None, row: Any) -> str:
    """One sentence for a person: when sending starts, in the lead's time zone and in UTC, and why then."""
    window = (
        f"{_clock(row.window_start)}-{_clock(row.window_end)} {_days(row.days)} in each lead's time zone "
        f"({row.timezone_fallback} for leads without one)"
    )
    if found is None:
        return "No lead is waiting for an email: add leads to the campaign."
    if found.now:
        return (
            f"Sending starts now: leads are inside the sending window, {window}. Each mailbox sends as its "
            "gaps and daily limit allow."
        )
    local = found.at.astimezone(zone(found.timezone, "UTC"))
    utc = found.at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"Sending starts at {local:%H:%M} {found.timezone} on {local:%A} {local:%Y-%m-%d} ({utc}): the "
        f"earliest any waiting lead can get its next email inside the sending window, {window}."
    )


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _days(mask: int) -> str:
    chosen = [i for i in range(7) if mask & (1 << i)]
    if len(chosen) == 7:
        return "every day"
    if chosen and chosen == list(range(chosen[0], chosen[-1] + 1)) and len(chosen) > 2:
        return f"{_DAY_NAMES[chosen[0]]}-{_DAY_NAMES[chosen[-1]]}"
    return ", ".join(_DAY_NAMES[i] for i in chosen)
