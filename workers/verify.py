"""Verifies queued leads (`verify_status = 'verifying'`) in batches, across workspaces: one batch per tick
(`outreach_core.verification.pipeline`, docs/verification.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.verification.pipeline import verify_batch

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

BATCH = 200


async def tick(runtime: Runtime, batch: int = BATCH) -> int:
    """Verify one batch of queued leads; returns how many leads were claimed (0 when none were due)."""
    return await verify_batch(runtime, batch)
