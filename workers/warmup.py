"""The `warmup` worker: one pass of the warmup pool per tick (`outreach_core.warmup.pipeline.warmup_pass`,
docs/warmup.md): plan each mailbox's day, send the warmup emails and replies due, look into recipients'
folders for the ones sent to them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.warmup.pipeline import warmup_pass

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One pass; returns how many warmup emails were handed off or found (0 when nothing was due)."""
    return await warmup_pass(runtime)
