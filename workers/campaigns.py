"""Applies the rules that end a campaign run: pause after `endOn`, complete when every lead is finished."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.campaigns.lifecycle import (
    lifecycle_principal,
    running_campaign_workspaces,
    settle_campaigns,
)
from workers.per_workspace import run_per_workspace

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

WORKSPACES_PER_TICK = 100


async def tick(runtime: Runtime) -> int:
    """One pass over up to `WORKSPACES_PER_TICK` workspaces with running campaigns, each in its own scoped
    transaction; returns how many campaigns were paused or completed."""
    return await run_per_workspace(
        runtime,
        find=running_campaign_workspaces,
        limit=WORKSPACES_PER_TICK,
        acting_as=lifecycle_principal,
        op=settle_campaigns,
        what="campaign rules",
    )
