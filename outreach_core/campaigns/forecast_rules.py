"""The send forecast, simulated (pure, no I/O): what the sender will send, day by day, to a campaign's waiting
leads, decided by the sender's own rules.

The sender decides every email with these functions, and so does the simulation:

- the window and days in each lead's time zone, `startOn`, `endOn` and the campaign's day
  (`campaigns/schedule.py`: `window_on` is what `in_window` checks, `campaign_day`, `not_started`, `ended`);
- when a follow-up is due (`schedule.next_step_at`: `waitDays` after the previous email);
- each mailbox's limit on each of its days with the ramp-up (`mailboxes/rules.py`: `limit_on`, as
  `today_limit`), the emails it already sent today (`sent_today`), and its gaps (`mean_gap_s`, the average of
  `next_gap`);
- the plan's monthly emails (`billing/rules.py`: `allowance_period`).

What the sender does per pass (one email per free mailbox, follow-ups first, then first emails up to
`dailyCap`) the simulation does per *segment*: a stretch of time in which the same leads' windows are open
and no day (the campaign's, a mailbox's, the plan's month) turns. It never looks at single leads: the
leads come in groups of (time zone, step, due time) with a count, so 100,000 leads in a few time zones cost
what a few groups cost. In a segment each mailbox can send one email per average gap, at most its limit for
its day; an idle mailbox banks at most one email (it sends the moment a lead becomes due). Follow-ups take
that room first (earliest due first), then first emails, shared among the open time zones in proportion to
their waiting leads, up to what is left of `dailyCap` and of the plan's emails. Emails go out at the start
of their segment, so the follow-ups they lead to are due `waitDays` later at the same time of day.

What it cannot know: replies, bounces and unsubscribes that will stop leads, other campaigns sharing the
mailboxes or the plan, failures and retries. docs/forecast.md says so.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from outreach_core.billing.rules import allowance_period
from outreach_core.campaigns.schedule import Schedule, campaign_day, next_step_at, window_on, zone
from outreach_core.mailboxes.rules import MailboxLimits, limit_on, local_day, mean_gap_s, sent_today

HORIZON_DAYS = 366
"""The forecast looks at most this many days ahead (from the first sending day)."""

Binding = str
"""What held sending back (see `LIMITS`)."""
LIMITS: dict[Binding, str] = {
    "noMailboxes": "the campaign has no active mailbox",
    "startOn": "sending starts on startOn",
    "mailboxLimits": "the mailboxes' daily limits",
    "rampUp": "the mailboxes' ramp-up (their limit grows day by day)",
    "window": "the sending window: its hours, divided by the mailboxes' gaps, allow no more",
    "dailyCap": "the campaign's dailyCap on first emails",
    "plan": "the plan's monthly emails",
    "endOn": "endOn: leads left without all their emails when sending ends",
    "horizon": f"more than {HORIZON_DAYS} days of sending",
}


@dataclass(frozen=True)
class MailboxGroup:
    """Identical mailboxes (same limits, ramp, time zone, gaps and count sent today)."""

    count: int
    limits: MailboxLimits
    min_gap_s: int
    max_gap_s: int


@dataclass(frozen=True)
class Waiting:
    """`count` leads in `timezone` (as stored; None = the campaign's fallback) waiting for email number
    `step` (0 = the first), due at `due` (None = now)."""

    timezone: str | None
    step: int
    due: dt.datetime | None
    count: int


@dataclass(frozen=True)
class Allowance:
    """The plan's monthly emails: `left` now, `per_month` from each new month of the plan (`anchor`)."""

    left: int
    per_month: int
    anchor: dt.datetime | None


@dataclass(frozen=True)
class Facts:
    now: dt.datetime
    schedule: Schedule
    daily_cap: int | None
    first_sent_today: int  # first emails counted against dailyCap on the campaign's current day
    wait_days: Sequence[int]  # per step; step 0's is not used
    mailboxes: Sequence[MailboxGroup]
    waiting: Sequence[Waiting]
    allowance: Allowance | None  # None = no plan in force: nothing is sent


@dataclass
class Outcome:
    days: list[tuple[dt.date, int, int]]  # (campaign day, first emails, follow-ups), every day from the first
    last_first_email_on: dt.date | None
    last_email_on: dt.date | None
    limited_by: list[Binding]  # most days first
    leads: int  # leads waiting when the forecast was made
    unfinished: int  # leads that would still be waiting for an email at the end


@dataclass
class _Group:
    """A mailbox group while simulating: its day, what it sent that day, its banked sends."""

    spec: MailboxGroup
    gap_s: float
    day: dt.date | None = None
    sent: int = 0
    credit: float = 0.0  # emails each of its mailboxes may send by its gaps (fractions carry over)

    def turn_day(self, at: dt.datetime) -> None:
        today = local_day(at, self.spec.limits.timezone)
        if today != self.day:
            if self.day is None:  # the first day: what the mailboxes sent already
                lim = self.spec.limits
                self.sent = self.spec.count * sent_today(lim.sent_day, lim.sent_count, today)
            else:
                self.sent = 0
            self.day = today

    def by_time(self) -> int:
        """What the group's gaps allow now: whole emails per mailbox."""
        return self.spec.count * math.floor(self.credit + 1e-9)

    def limit(self) -> int:
        assert self.day is not None
        return self.spec.count * limit_on(self.spec.limits, self.day)


@dataclass
class _Bucket:
    due: dt.datetime
    count: int


@dataclass
class _State:
    # (zone key, step) -> buckets of leads in due order
    queues: dict[tuple[str, int], list[_Bucket]] = field(default_factory=lambda: defaultdict(list))
    per_day: dict[dt.date, list[int]] = field(default_factory=dict)
    bound: dict[Binding, set[dt.date]] = field(default_factory=lambda: defaultdict(set))


def forecast(facts: Facts) -> Outcome:
    """Simulate the sender from `facts.now` on (see the module docstring)."""
    schedule = facts.schedule
    fallback = zone(schedule.timezone_fallback, "UTC")
    state = _State()
    start = facts.now
    if schedule.start_on is not None:
        first_day = dt.datetime.combine(dt.date.fromisoformat(schedule.start_on), dt.time(), tzinfo=fallback)
        start = max(start, first_day.astimezone(dt.UTC))
    total = 0
    for w in facts.waiting:
        if w.count <= 0 or w.step >= len(facts.wait_days):
            continue
        key = zone(w.timezone, schedule.timezone_fallback).key
        due = start if w.due is None else max(start, w.due)
        state.queues[(key, w.step)].append(_Bucket(due, w.count))
        total += w.count
    for buckets in state.queues.values():
        buckets.sort(key=lambda b: b.due)
    limited: list[Binding] = []
    if start > facts.now and total:
        limited.append("startOn")
    if not facts.mailboxes and total:
        return Outcome([], None, None, ["noMailboxes"], total, total)
    # a mailbox sends at most one email a pass, and passes follow each other (about one a second)
    groups = [_Group(g, max(1.0, mean_gap_s(g.min_gap_s, g.max_gap_s))) for g in facts.mailboxes]
    end = start + dt.timedelta(days=HORIZON_DAYS)
    end_cause: Binding = "horizon"
    if schedule.end_on is not None:
        last = dt.date.fromisoformat(schedule.end_on) + dt.timedelta(days=1)
        end_on = dt.datetime.combine(last, dt.time(), tzinfo=fallback).astimezone(dt.UTC)
        if end_on <= end:
            end, end_cause = end_on, "endOn"
    allowance = facts.allowance
    plan_left = allowance.left if allowance is not None else 0
    plan_turns = allowance_period(start, allowance.anchor)[1] if allowance is not None else end
    cap_day: dt.date | None = campaign_day(facts.now, schedule)
    first_today = facts.first_sent_today

    day_start = _day_start(start, fallback)
    while day_start < end and _pending(state):
        day_end = _day_start(day_start + dt.timedelta(hours=36), fallback)
        lo, hi = max(day_start, start), min(day_end, end)
        for a, b, open_zones in _segments(lo, hi, state, schedule, groups, plan_turns):
            if a >= plan_turns and allowance is not None:
                plan_left = allowance.per_month
                plan_turns = allowance_period(a, allowance.anchor)[1]
            today = campaign_day(a, schedule)
            if today != cap_day:
                cap_day, first_today = today, 0
            for g in groups:
                g.turn_day(a)
                g.credit += (b - a).total_seconds() / g.gap_s
            if not open_zones:
                _idle(groups)
                continue
            # each group: what its limit left today and what its gaps allow now (the lesser binds)
            rooms = [(max(0, g.limit() - g.sent), g.by_time()) for g in groups]
            room = min(sum(min(pair) for pair in rooms), plan_left)
            follow = _due(state, open_zones, b, follow_ups=True)
            first = _due(state, open_zones, b, follow_ups=False)
            demand = sum(n for _, n in follow) + sum(n for _, n in first)
            sent_follow = _take(state, follow, room, a, facts.wait_days)
            room -= sent_follow
            cap_room = None if facts.daily_cap is None else max(0, facts.daily_cap - first_today)
            first_room = room if cap_room is None else min(room, cap_room)
            sent_first = _take_shared(state, first, first_room, a, facts.wait_days)
            first_today += sent_first
            sent = sent_follow + sent_first
            plan_left -= sent
            _spend(groups, sent)
            _idle(groups)
            if sent:
                counts = state.per_day.setdefault(today, [0, 0])
                counts[0] += sent_first
                counts[1] += sent_follow
            if sent < demand:
                _why(state, today, sent, demand, sent_first, first, cap_room, groups, rooms, plan_left + sent)
        day_start = day_end
    unfinished = _waiting_leads(state)
    if unfinished:
        state.bound[end_cause].add(campaign_day(end - dt.timedelta(seconds=1), schedule))
    return _outcome(state, limited, total, unfinished)


def _day_start(at: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    local = at.astimezone(tz).date()
    return dt.datetime.combine(local, dt.time(), tzinfo=tz).astimezone(dt.UTC)


def _pending(state: _State) -> bool:
    return any(q for q in state.queues.values())


def _waiting_leads(state: _State) -> int:
    """Leads still waiting: each lead is in one bucket (its next email), so the buckets' counts."""
    return sum(b.count for q in state.queues.values() for b in q)


def _segments(
    lo: dt.datetime,
    hi: dt.datetime,
    state: _State,
    schedule: Schedule,
    groups: Sequence[_Group],
    plan_turns: dt.datetime,
) -> list[tuple[dt.datetime, dt.datetime, frozenset[str]]]:
    """[lo, hi) cut where a time zone's window opens or closes, a mailbox's day or the plan's month turns;
    each piece with the time zones (that have waiting leads) whose window is open through it."""
    if lo >= hi:
        return []
    zones = sorted({z for (z, _), q in state.queues.items() if q})
    windows: dict[str, list[tuple[dt.datetime, dt.datetime]]] = {}
    cuts = {lo, hi}
    for key in zones:
        tz = zone(key, schedule.timezone_fallback)
        first = lo.astimezone(tz).date() - dt.timedelta(days=1)
        spans = []
        for i in range(3):
            w = window_on(first + dt.timedelta(days=i), key, schedule)
            if w is None:
                continue
            a, b = max(lo, w[0].astimezone(dt.UTC)), min(hi, w[1].astimezone(dt.UTC))
            if a < b:
                spans.append((a, b))
                cuts.update((a, b))
        windows[key] = spans
    for g in groups:
        tz = zone(g.spec.limits.timezone, "UTC")
        midnight = _day_start(hi, tz)
        if lo < midnight < hi:
            cuts.add(midnight)
    if lo < plan_turns < hi:
        cuts.add(plan_turns)
    ordered = sorted(cuts)
    pieces = []
    for a, b in itertools.pairwise(ordered):
        open_zones = frozenset(k for k, spans in windows.items() if any(s <= a and b <= e for s, e in spans))
        pieces.append((a, b, open_zones))
    return pieces


def _due(
    state: _State, open_zones: frozenset[str], before: dt.datetime, *, follow_ups: bool
) -> list[tuple[tuple[str, int], int]]:
    """Per (zone, step) queue of an open zone: how many leads are due before `before`."""
    found = []
    for (key, step), q in state.queues.items():
        if key not in open_zones or (step > 0) != follow_ups:
            continue
        n = 0
        for bucket in q:
            if bucket.due >= before:
                break
            n += bucket.count
        if n:
            found.append(((key, step), n))
    return found


def _take(
    state: _State,
    due: list[tuple[tuple[str, int], int]],
    room: int,
    at: dt.datetime,
    wait_days: Sequence[int],
) -> int:
    """Follow-ups: the earliest due first, up to `room`."""
    if room <= 0 or not due:
        return 0
    wanted = dict(due)
    sent = 0
    for key in sorted(wanted, key=lambda k: (state.queues[k][0].due, k)):
        n = min(room - sent, wanted[key])
        sent += _pop(state, key, n, at, wait_days)
        if sent >= room:
            break
    return sent


def _take_shared(
    state: _State,
    due: list[tuple[tuple[str, int], int]],
    room: int,
    at: dt.datetime,
    wait_days: Sequence[int],
) -> int:
    """First emails: shared among the open time zones in proportion to their due leads (largest remainder)."""
    total = sum(n for _, n in due)
    if room <= 0 or total == 0:
        return 0
    if room >= total:
        shares = {k: n for k, n in due}
    else:
        exact = {k: n * room / total for k, n in due}
        shares = {k: math.floor(v) for k, v in exact.items()}
        left = room - sum(shares.values())
        for k in sorted(exact, key=lambda k: (shares[k] - exact[k], k))[:left]:
            shares[k] += 1
    return sum(_pop(state, k, n, at, wait_days) for k, n in shares.items() if n)


def _pop(state: _State, key: tuple[str, int], n: int, at: dt.datetime, wait_days: Sequence[int]) -> int:
    """Send the next email to `n` due leads of a queue; they wait for their next step."""
    q = state.queues[key]
    zone_key, step = key
    sent = 0
    while sent < n and q:
        take = min(n - sent, q[0].count)
        q[0].count -= take
        if q[0].count == 0:
            q.pop(0)
        sent += take
    if step + 1 < len(wait_days) and sent:
        nxt = state.queues[(zone_key, step + 1)]
        due = next_step_at(at, wait_days[step + 1])
        if nxt and nxt[-1].due == due:
            nxt[-1].count += sent
        else:
            nxt.append(_Bucket(due, sent))
            nxt.sort(key=lambda b: b.due)
    return sent


def _spend(groups: Sequence[_Group], sent: int) -> None:
    """The emails of a segment go out from the groups with room, each up to its limit and its banked sends."""
    for g in groups:
        if sent <= 0:
            break
        n = min(sent, max(0, g.limit() - g.sent), g.by_time())
        g.sent += n
        g.credit -= n / g.spec.count
        sent -= n


def _idle(groups: Sequence[_Group]) -> None:
    """An idle mailbox banks at most one email: it sends the moment a lead becomes due, then waits its gap."""
    for g in groups:
        g.credit = min(g.credit, 1.0)


def _why(
    state: _State,
    day: dt.date,
    sent: int,
    demand: int,
    sent_first: int,
    first: list[tuple[tuple[str, int], int]],
    cap_room: int | None,
    groups: Sequence[_Group],
    rooms: Sequence[tuple[int, int]],
    plan_left: int,
) -> None:
    """Record what kept due leads waiting in a segment: `dailyCap`; else, when the mailboxes sent all they
    could, the plan, or for each group whichever of its limit (ramp) and its gaps bound it."""
    first_due = sum(n for _, n in first)
    if cap_room is not None and sent_first == cap_room and sent_first < first_due:
        state.bound["dailyCap"].add(day)
    mailbox_room = sum(min(pair) for pair in rooms)
    if sent < min(mailbox_room, plan_left) or sent >= demand:
        return
    if plan_left <= mailbox_room:
        state.bound["plan"].add(day)
        return
    for g, (left, by_time) in zip(groups, rooms, strict=True):
        if left <= by_time:
            ramping = g.limit() < g.spec.count * g.spec.limits.daily_limit
            state.bound["rampUp" if ramping else "mailboxLimits"].add(day)
        else:
            state.bound["window"].add(day)


def _outcome(state: _State, limited: list[Binding], leads: int, unfinished: int) -> Outcome:
    days: list[tuple[dt.date, int, int]] = []
    last_first = last_email = None
    if state.per_day:
        first_day, last_day = min(state.per_day), max(state.per_day)
        d = first_day
        while d <= last_day:
            f, u = state.per_day.get(d, [0, 0])
            days.append((d, f, u))
            if f:
                last_first = d
            if f or u:
                last_email = d
            d += dt.timedelta(days=1)
    ranked = sorted(state.bound, key=lambda k: (-len(state.bound[k]), list(LIMITS).index(k)))
    return Outcome(days, last_first, last_email, limited + ranked, leads, unfinished)
