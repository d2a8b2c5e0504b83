"""Pure rules of the analytics: periods in the workspace time zone, rates, and the A/B winner rule
(docs/analytics.md, "Winner")."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

UTC = dt.UTC
MIN_SENDS = 50
"""A step has a winner only when each of its variants has at least this many sends (spec)."""
CONFIDENCE = 0.95
"""Two-sided significance level of the winner test."""


@dataclass(frozen=True)
class Period:
    """`days` calendar days in `zone` ending today (included), as UTC instants, and the period before."""

    first: dt.date
    days: int
    zone: ZoneInfo
    start: dt.datetime
    end: dt.datetime
    previous_start: dt.datetime

    @property
    def dates(self) -> list[dt.date]:
        return [self.first + dt.timedelta(days=i) for i in range(self.days)]


def midnight(day: dt.date, zone: ZoneInfo) -> dt.datetime:
    """The instant a calendar day begins in `zone` (a DST gap at midnight: the first instant that exists)."""
    local = dt.datetime.combine(day, dt.time(0), tzinfo=zone)
    utc = local.astimezone(UTC)
    if utc.astimezone(zone).replace(tzinfo=None) != local.replace(tzinfo=None):  # midnight did not exist
        utc = local.replace(fold=1).astimezone(UTC)
    return utc


def period(now: dt.datetime, days: int, zone: ZoneInfo) -> Period:
    today = now.astimezone(zone).date()
    first = today - dt.timedelta(days=days - 1)
    start = midnight(first, zone)
    return Period(
        first=first,
        days=days,
        zone=zone,
        start=start,
        end=midnight(today + dt.timedelta(days=1), zone),
        previous_start=midnight(first - dt.timedelta(days=days), zone),
    )


def floor_hour(at: dt.datetime) -> dt.datetime:
    return at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def ceil_hour(at: dt.datetime) -> dt.datetime:
    floor = floor_hour(at)
    return floor if floor == at else floor + dt.timedelta(hours=1)


def floor_day(at: dt.datetime) -> dt.datetime:
    return at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def ceil_day(at: dt.datetime) -> dt.datetime:
    floor = floor_day(at)
    return floor if floor == at else floor + dt.timedelta(days=1)


def floor_week(at: dt.datetime) -> dt.datetime:
    """The start of the 7-day UTC block (counted from the epoch) holding `at`: the weekly grain's bucket."""
    seconds = int(at.timestamp())
    return dt.datetime.fromtimestamp(seconds - seconds % WEEK_SECONDS, UTC)


def ceil_week(at: dt.datetime) -> dt.datetime:
    floor = floor_week(at)
    return floor if floor == at else floor + dt.timedelta(seconds=WEEK_SECONDS)


WEEK_SECONDS = 7 * 86400
"""The weekly grain (`rollups.WEEK`): 7-day UTC blocks from the epoch (Thursday 00:00 UTC)."""


def pieces(start: dt.datetime, end: dt.datetime) -> list[tuple[str, dt.datetime, dt.datetime]]:
    """[start, end) as rollup reads (`(grain, from, to)`): the whole 7-day blocks from the weekly buckets,
    the whole UTC days at their edges from the daily ones, the hours at either edge from the hourly ones.
    Instants inside an hour are read at the hour (half-hour zones). A 90-day period reads at most 12 weekly,
    12 daily and 46 hourly rows a key (the days alone were 90)."""
    s, e = floor_hour(start), ceil_hour(end)
    d0, d1 = ceil_day(s), floor_day(e)
    if d0 >= d1:
        return [("h", s, e)]
    w0, w1 = ceil_week(d0), floor_week(d1)
    whole = w0 < w1
    middle = [("d", d0, w0), ("k", w0, w1), ("d", w1, d1)] if whole else [("d", d0, d1)]
    return [p for p in (("h", s, d0), *middle, ("h", d1, e)) if p[1] < p[2]]


def offsets(start: dt.datetime, end: dt.datetime, zone: ZoneInfo) -> list[tuple[dt.datetime, int]]:
    """The UTC offsets (seconds) of `zone` over [start, end) as `(from, offset)` pieces, the first from
    `start`: each transition found by bisection to the second (a zone changes its offset at most once a
    day, which every zone of the tz database does). A local calendar day is then `(instant + offset) //
    86400` days after 1970-01-01."""

    def offset(at: dt.datetime) -> int:
        found = at.astimezone(zone).utcoffset()
        return int(found.total_seconds()) if found is not None else 0

    out = [(start, offset(start))]
    day = dt.timedelta(days=1)
    lo = start
    while lo < end:
        hi = min(lo + day, end)
        if offset(hi) != out[-1][1]:
            # offset(a) is the last piece's, offset(b) is not: the change is in (a, b], bisected in whole
            # seconds (transitions fall on whole seconds; whole bounds make the loop end)
            a = lo.replace(microsecond=0)
            b = hi if hi.microsecond == 0 else hi.replace(microsecond=0) + dt.timedelta(seconds=1)
            while b - a > dt.timedelta(seconds=1):
                mid = a + (b - a) // 2
                mid = mid.replace(microsecond=0)
                if offset(mid) == out[-1][1]:
                    a = mid
                else:
                    b = mid
            out.append((b, offset(b)))
        lo = hi
    return out


def local_day(number: int) -> dt.date:
    """The calendar date `number` days after 1970-01-01 (what `offsets` counts days in)."""
    return _EPOCH_DAY + dt.timedelta(days=number)


_EPOCH_DAY = dt.date(1970, 1, 1)


def rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole > 0 else 0.0


@dataclass(frozen=True)
class Arm:
    """One variant of a step, as the winner rule sees it."""

    variant_id: str | None
    sent: int
    replied: int
    positive: int


Metric = Literal["replyRate", "positiveRate"]


@dataclass(frozen=True)
class Verdict:
    variant_id: str | None = None
    metric: Metric | None = None
    lift: float | None = None
    confidence: float | None = None
    reason: str | None = None


def two_proportion_p(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided p-value of the pooled two-proportion z-test of x1/n1 against x2/n2 (1.0 when undefined)."""
    if n1 <= 0 or n2 <= 0:
        return 1.0
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0
    z = (x1 / n1 - x2 / n2) / se
    return math.erfc(abs(z) / math.sqrt(2))


def _beats_all(best: Arm, others: Sequence[Arm], metric: Metric) -> float | None:
    """The smallest confidence with which `best` beats every other arm on `metric` at 95 %, else None."""

    def count(a: Arm) -> int:
        return a.replied if metric == "replyRate" else a.positive

    confidences = []
    for other in others:
        if count(best) * other.sent <= count(other) * best.sent:
            return None
        p = two_proportion_p(count(best), best.sent, count(other), other.sent)
        if p >= 1 - CONFIDENCE:
            return None
        confidences.append(1 - p)
    return min(confidences)


def winner(arms: Sequence[Arm], names: Mapping[str | None, str] | None = None) -> Verdict:
    """The step's winner (docs/analytics.md): every variant needs `MIN_SENDS` sends; the variant with the
    highest reply rate wins when a two-proportion z-test shows it higher than each other variant's at 95 %
    (two-sided); when reply rates do not separate, the positive-reply rate decides by the same test; else
    no winner. `lift` is relative to the runner-up on the deciding metric."""
    label = names or {}
    if len(arms) < 2:
        return Verdict(reason="The step has a single variant: nothing to compare.")
    short = [a for a in arms if a.sent < MIN_SENDS]
    if short:
        which = ", ".join(f"{label.get(a.variant_id, a.variant_id or '?')} has {a.sent}" for a in short)
        return Verdict(
            reason=f"Every variant needs {MIN_SENDS} or more sends before a winner is named ({which})."
        )
    metrics: tuple[Metric, ...] = ("replyRate", "positiveRate")
    for metric in metrics:

        def value(a: Arm, metric: str = metric) -> float:
            return (a.replied if metric == "replyRate" else a.positive) / a.sent

        ranked = sorted(arms, key=lambda a: (-value(a), -a.positive, str(a.variant_id)))
        best, rest = ranked[0], ranked[1:]
        confidence = _beats_all(best, rest, metric)
        if confidence is not None:
            runner = value(rest[0])
            lift = round(value(best) / runner - 1, 4) if runner > 0 else None
            return Verdict(best.variant_id, metric, lift, round(confidence, 4))
    return Verdict(
        reason="No variant is ahead at 95 % confidence on reply rate or on positive-reply rate "
        "(two-proportion z-test); keep sending or stop the test."
    )
