"""Identifiers: opaque, prefixed, unique and ordered by creation time."""

from __future__ import annotations

import re
import time

from outreach_core.kernel.ids import new_id, new_ids

SHAPE = re.compile(r"^lead_[0-9a-hjkmnp-tv-z]{26}$")


def test_single_and_bulk_ids_share_one_shape() -> None:
    single = new_id("lead")
    batch = new_ids("lead", 5000)
    assert SHAPE.match(single) and all(SHAPE.match(i) for i in batch)
    assert len(set(batch)) == 5000 and single not in batch


def test_ids_sort_by_creation_time() -> None:
    first = new_ids("lead", 3)
    time.sleep(0.003)
    second = new_id("lead")
    time.sleep(0.003)
    third = new_ids("lead", 3)
    assert max(first) < second < min(third)
    assert new_ids("lead", 0) == []
