"""Runs due label timers: takes labels off, and applies labels (with their own triggers), after N days."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.labels.timers import due_timer_workspaces, run_due_label_timers, timer_principal

if TYPE_CHECKING:
    from outreach_core.runtime import Runtime

WORKSPACES_PER_TICK = 20


async def tick(runtime: Runtime) -> int:
    """One batch: up to `WORKSPACES_PER_TICK` workspaces with due timers, each in its own scoped transaction
    (up to 500 timers each); returns how many timers ran.

    A workspace whose timers fail does not hold up the others: every workspace of the batch is tried, then
    the failures are raised together (the loop logs them and backs off; the timers stay due and run again).
    """
    handled = 0
    failures: list[Exception] = []
    for workspace_id in await runtime.system_read(due_timer_workspaces, WORKSPACES_PER_TICK):
        try:
            handled += await runtime.execute(timer_principal(workspace_id), run_due_label_timers)
        except Exception as exc:
            failures.append(exc)
    if failures:
        raise ExceptionGroup(f"label timers failed in {len(failures)} workspace(s)", failures)
    return handled
