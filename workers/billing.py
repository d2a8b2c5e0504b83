"""Writes down billing periods that rolled over and ends plans cancelled at their period's end."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.billing.renewal import roll_over_periods

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One pass (`billing/renewal.py`): reads never wait for it, it only makes stored columns agree."""
    return await runtime.system(roll_over_periods)
