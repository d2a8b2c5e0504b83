"""Running one core operation per workspace that has work, each in its own scoped transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from outreach_core.kernel.context import Principal, SystemContext, WorkspaceContext

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def run_per_workspace(
    runtime: Runtime,
    *,
    find: Callable[[SystemContext, int], Awaitable[list[str]]],
    limit: int,
    acting_as: Callable[[str], Principal],
    op: Callable[[WorkspaceContext], Awaitable[int]],
    what: str,
) -> int:
    """`find` up to `limit` workspaces with work (one cross-workspace read), then run `op` for each as
    `acting_as(workspace)`, in that workspace's own transaction; returns the sum of what `op` returned.

    A workspace that fails does not hold up the others: every workspace is tried, then the failures are
    raised together (the worker loop logs them and backs off; the work stays due and runs again)."""
    handled = 0
    failures: list[Exception] = []
    for workspace_id in await runtime.system_read(find, limit):
        try:
            handled += await runtime.execute(acting_as(workspace_id), op)
        except Exception as exc:
            failures.append(exc)
    if failures:
        raise ExceptionGroup(f"{what} failed in {len(failures)} workspace(s)", failures)
    return handled
