"""Worker selection by name and the usage tracker's restore (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from outreach_core.kernel.usage import UsageTracker
from workers import usage_flush
from workers.registry import ALL_WORKERS, select


def test_select_all_by_default() -> None:
    assert [w.name for w in select(None)] == list(ALL_WORKERS)
    assert [w.name for w in select([])] == list(ALL_WORKERS)


def test_select_by_name_strips_and_deduplicates() -> None:
    workers = select([" usage", "usage", ""])
    assert [w.name for w in workers] == ["usage"]
    usage = workers[0]
    assert usage.tick is usage_flush.tick
    assert usage.interval_s == 5.0


def test_select_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown worker: nope; known workers: .*usage"):
        select(["usage", "nope"])


def test_select_builds_fresh_workers() -> None:
    assert select(["usage"])[0] is not select(["usage"])[0]


def test_restore_puts_values_back_keeping_the_newer_time() -> None:
    tracker = UsageTracker()
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    tracker.touch("api_key", "a", t0)
    tracker.touch("api_key", "b", t0)
    taken = tracker.take_pending()
    assert tracker.take_pending() == {}

    tracker.touch("api_key", "a", t0 + timedelta(seconds=5))  # touched again while the write was failing
    tracker.restore(taken)
    assert tracker.take_pending() == {
        ("api_key", "a"): t0 + timedelta(seconds=5),
        ("api_key", "b"): t0,
    }
