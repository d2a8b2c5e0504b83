"""The rollup reads of a period (`rules.pieces`: weeks, days, hours) and a zone's offsets over it
(`rules.offsets`), which the series' grouping by local day is written from."""

from __future__ import annotations

import datetime as dt
import itertools
from zoneinfo import ZoneInfo

import pytest

from outreach_core.analytics.rules import WEEK_SECONDS, local_day, offsets, period, pieces

UTC = dt.UTC
NOW = dt.datetime(2026, 3, 31, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata", "Pacific/Chatham"])
@pytest.mark.parametrize("days", [7, 30, 90])
def test_pieces_cover_the_period_once_with_whole_weeks_days_and_hours(zone: str, days: int) -> None:
    p = period(NOW, days, ZoneInfo(zone))
    for start, end in ((p.start, p.end), (p.previous_start, p.start)):
        got = pieces(start, end)
        step = {"h": 3600, "d": 86400, "k": WEEK_SECONDS}
        assert got[0][1] == start.replace(minute=0) and got[-1][2] >= end > got[-1][2] - dt.timedelta(hours=1)
        for (_, _, hi), (_, lo, _) in itertools.pairwise(got):
            assert hi == lo  # contiguous, no overlap
        for grain, lo, hi in got:
            assert int(lo.timestamp()) % step[grain] == 0 and int(hi.timestamp()) % step[grain] == 0
        rows = {g: sum((hi - lo).total_seconds() // step[g] for gg, lo, hi in got if gg == g) for g in step}
        assert rows["h"] <= 46 and rows["d"] <= 12 and rows["k"] <= 13
        if days == 90:
            assert rows["k"] >= 11  # the 90 days are read mostly as weeks


def test_offsets_find_each_transition_to_the_second() -> None:
    zone = ZoneInfo("America/New_York")
    start = dt.datetime(2026, 1, 1, 5, tzinfo=UTC)
    end = dt.datetime(2026, 12, 1, 5, tzinfo=UTC)
    assert offsets(start, end, zone) == [
        (start, -5 * 3600),
        (dt.datetime(2026, 3, 8, 7, tzinfo=UTC), -4 * 3600),  # 02:00 EST becomes 03:00 EDT
        (dt.datetime(2026, 11, 1, 6, tzinfo=UTC), -5 * 3600),  # 02:00 EDT becomes 01:00 EST
    ]
    # Lord Howe moves by half an hour, at 02:00 local (15:00 UTC the day before) in April
    howe = offsets(
        dt.datetime(2026, 3, 1, tzinfo=UTC),
        dt.datetime(2026, 5, 1, tzinfo=UTC),
        ZoneInfo("Australia/Lord_Howe"),
    )
    assert howe == [
        (dt.datetime(2026, 3, 1, tzinfo=UTC), 11 * 3600),
        (dt.datetime(2026, 4, 4, 15, tzinfo=UTC), 37800),
    ]
    assert offsets(start, end, ZoneInfo("UTC")) == [(start, 0)]
    # the local day of an instant: (seconds + offset) div 86400 days after the epoch
    at = dt.datetime(2026, 3, 8, 4, 30, tzinfo=UTC)  # 23:30 EST on the 7th
    assert local_day((int(at.timestamp()) - 5 * 3600) // 86400) == dt.date(2026, 3, 7)
    # bounds inside a second still find the transition to the second
    odd = offsets(start + dt.timedelta(microseconds=250), end - dt.timedelta(microseconds=250), zone)
    assert [at for at, _ in odd[1:]] == [
        dt.datetime(2026, 3, 8, 7, tzinfo=UTC),
        dt.datetime(2026, 11, 1, 6, tzinfo=UTC),
    ]
