"""Merges queued import rows into the workspaces' leads (see `outreach_core.imports.merge`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from outreach_core.imports.merge import (
    fail_stale_imports,
    import_principal,
    merge_queued_rows,
    queued_import_workspaces,
    stale_imports,
)
from outreach_core.targets.lead_counts import fold_lead_counters
from workers.per_workspace import run_per_workspace

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

WORKSPACES_PER_TICK = 20
STALE_CHECK_S = 30.0
"""How often the worker looks for imports whose final chunk never came (a read; it writes only for some)."""
_last_stale_check = float("-inf")


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
    global _last_stale_check
    if not merged and time.monotonic() - _last_stale_check >= STALE_CHECK_S:
        _last_stale_check = time.monotonic()
        stale = await runtime.system_read(stale_imports)
        if stale:
            await runtime.system(fail_stale_imports, stale)
    return merged
