"""Merges queued import rows into the workspaces' leads (see `outreach_core.imports.merge`), and hands the
stored leads on to the workers that wait for storing to end."""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from outreach_core.imports.merge import (
    drop_orphan_parts,
    fail_stale_imports,
    import_principal,
    merge_queued_rows,
    queued_import_workspaces,
    refresh_import_statistics,
    release_merged_parts,
    stale_imports,
)
from outreach_core.targets.import_progress import import_parts_queued
from outreach_core.targets.list_sizes import fold_count_deltas
from workers.loop import Tick, poll_soon, runs_here, wake
from workers.per_workspace import run_per_workspace

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

WORKSPACES_PER_TICK = 20
STALE_CHECK_S = 30.0
"""How often the worker looks for imports whose final chunk never came (a read; it writes only for some)."""
_last_stale_check = float("-inf")
_merging: weakref.WeakSet[Runtime] = weakref.WeakSet()
"""The runtimes whose last tick merged rows."""
STORED_NEXT = ("enrich", "search-index", "verify")
"""The workers that wait for storing to end (`import_parts_queued`), woken when the queue is drained."""
IMPORT = "import"
ENRICH = "enrich"
_storing_elsewhere: weakref.WeakSet[Runtime] = weakref.WeakSet()
"""The runtimes whose `enrich` worker saw an import being stored by another process (`after_storing`)."""


@dataclass
class _Statistics:
    """PostgreSQL: the statistics refresh running beside the merges, and the tables due for the next one."""

    running: asyncio.Task[None] | None = None
    due: set[str] = field(default_factory=set)


_statistics: weakref.WeakKeyDictionary[Runtime, _Statistics] = weakref.WeakKeyDictionary()


async def tick(runtime: Runtime) -> int:
    """One batch: one queued part (a chunk, up to 5,000 rows) for each of up to `WORKSPACES_PER_TICK`
    workspaces, each in its own transaction; returns the rows merged. A failing workspace does not hold up
    the others. After a batch that merged rows, the lead counters' and the list sizes' deltas are folded
    (PostgreSQL; one short transaction), and the planner statistics the merges made due are refreshed
    on another connection while the next batch merges (`_refresh_statistics_beside`)."""
    due: set[str] = set()
    merged = 0
    op = merge_queued_rows if runtime.is_sqlite else partial(merge_queued_rows, analyse_after=due)
    try:
        merged = await run_per_workspace(
            runtime,
            find=queued_import_workspaces,
            limit=WORKSPACES_PER_TICK,
            acting_as=import_principal,
            op=op,
            what="import merge",
        )
    finally:
        if runtime.is_sqlite:
            # the side file's merged parts, after the merges' commits (also those before a failing workspace)
            await runtime.system_read(release_merged_parts)
        else:
            _refresh_statistics_beside(runtime, due, merged=merged > 0)
    if merged:
        await runtime.system(fold_count_deltas)
        _merging.add(runtime)
    elif runtime in _merging:
        # the queue is drained: the workers that wait for storing to end start now, not at their next poll
        _merging.discard(runtime)
        wake(*STORED_NEXT)  # in this process; in another one they poll soon (`after_storing`)
    global _last_stale_check
    if not merged and time.monotonic() - _last_stale_check >= STALE_CHECK_S:
        _last_stale_check = time.monotonic()
        stale = await runtime.system_read(stale_imports)
        if stale:
            await runtime.system(fail_stale_imports, stale)
        if runtime.is_sqlite:
            await runtime.system(drop_orphan_parts)
    return merged


async def stop(runtime: Runtime) -> None:
    """When the worker stops: wait for the statistics refresh still running beside the merges (an `ANALYZE`,
    a second or two at a million leads), so that it ends with its transaction instead of being dropped with
    the event loop; what it raised is raised here (the loop logs it)."""
    state = _statistics.pop(runtime, None)
    if state is not None and state.running is not None:
        await state.running


def _refresh_statistics_beside(runtime: Runtime, due: set[str], *, merged: bool) -> None:
    """Start `refresh_import_statistics` in its own task and transaction, unless the last one still runs
    (then `due` waits for a later tick); after a tick that merged nothing, only if some table is due. In
    the merge's transaction an ANALYZE of `leads` held the import back by about 12 µs a row at 200,000 rows
    (`bench/import_e2e.py`); beside it, it runs on the other core. What the last refresh raised is raised
    here, into the worker loop (logged, backed off)."""
    state = _statistics.setdefault(runtime, _Statistics())
    state.due |= due
    if state.running is not None:
        if not state.running.done():
            return
        finished, state.running = state.running, None
        finished.result()
    if state.due or merged:
        tables, state.due = state.due, set()
        state.running = asyncio.create_task(runtime.system(refresh_import_statistics, tables))


def after_storing(tick: Tick) -> Tick:
    """The `enrich` worker's tick, for a process where no `import` worker runs (under `outreach serve` it
    has a child of its own) and whose `wake` therefore never comes. While an import is being stored, after
    a tick that found nothing (or looked domains up), the worker polls again within `SOON_S` (a short read)
    instead of its interval, so that it starts within a quarter of a second of the queue's last part; the
    tick that finds the queue drained wakes the other workers of `STORED_NEXT` in this process, which then
    need no poll of their own."""

    async def waiting(runtime: Runtime) -> int:
        handled = await tick(runtime)
        if runs_here(IMPORT) or (handled and runtime not in _storing_elsewhere):
            return handled
        if await runtime.system_read(import_parts_queued):
            _storing_elsewhere.add(runtime)
            poll_soon(ENRICH)
        elif runtime in _storing_elsewhere:
            _storing_elsewhere.discard(runtime)
            wake(*STORED_NEXT)
        return handled

    waiting.__doc__ = tick.__doc__
    return waiting
