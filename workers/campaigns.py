"""Applies the rules that end a campaign run: pause after `endOn`, complete when every lead is finished."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.campaigns.lifecycle import (
    lifecycle_principal,
    running_campaign_workspaces,
    settle_campaigns,
)

if TYPE_CHECKING:
    from outreach_core.runtime import Runtime

WORKSPACES_PER_TICK = 100


async def tick(runtime: Runtime) -> int:
    """One pass over up to `WORKSPACES_PER_TICK` workspaces with running campaigns, each in its own scoped
    transaction; returns how many campaigns were paused or completed.

    A workspace that fails does not hold up the others; the failures are raised together afterwards (the
    loop logs them and backs off)."""
    changed = 0
    failures: list[Exception] = []
    for workspace_id in await runtime.system_read(running_campaign_workspaces, WORKSPACES_PER_TICK):
        try:
            changed += await runtime.execute(lifecycle_principal(workspace_id), settle_campaigns)
        except Exception as exc:
            failures.append(exc)
    if failures:
        raise ExceptionGroup(f"campaign rules failed in {len(failures)} workspace(s)", failures)
    return changed
