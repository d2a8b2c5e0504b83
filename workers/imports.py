"""Merges queued import rows into the workspaces' leads (see `outreach_core.imports.merge`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.imports.merge import import_principal, merge_queued_rows, queued_import_workspaces
from outreach_core.targets.lead_counts import fold_lead_counters
from workers.per_workspace import run_per_workspace

if TYPE_CHECKING:
    from outreach_core.runtime import Runtime

WORKSPACES_PER_TICK = 20


async def tick(runtime: Runtime) -> int:
    """One batch: one queued part (a chunk, up to 5,000 rows) for each of up to `WORKSPACES_PER_TICK`
    workspaces, each in its own transaction; returns the rows merged. A failing workspace does not hold up
    the others. After a batch that merged rows, the lead counters' deltas are folded (PostgreSQL; a short
    transaction of its own)."""
    merged = await run_per_workspace(
        runtime,
        find=queued_import_workspaces,
        limit=WORKSPACES_PER_TICK,
        acting_as=import_principal,
        op=merge_queued_rows,
        what="import merge",
    )
    if merged:
        await runtime.system(fold_lead_counters)
    return merged
