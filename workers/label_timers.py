"""Runs due label timers: takes labels off, and applies labels (with their own triggers), after N days."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.labels.timers import due_timer_workspaces, run_due_label_timers, timer_principal
from workers.per_workspace import run_per_workspace

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

WORKSPACES_PER_TICK = 20


async def tick(runtime: Runtime) -> int:
    """One batch: up to `WORKSPACES_PER_TICK` workspaces with due timers, each in its own scoped transaction
    (up to 500 timers each); returns how many timers ran. A failing workspace does not hold up the others."""
    return await run_per_workspace(
        runtime,
        find=due_timer_workspaces,
        limit=WORKSPACES_PER_TICK,
        acting_as=timer_principal,
        op=run_due_label_timers,
        what="label timers",
    )
