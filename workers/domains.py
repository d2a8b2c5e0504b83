"""Checks every sending domain again daily, and new ones (a mailbox was just connected) at once
(`outreach_core.deliverability.pipeline`, docs/deliverability.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.deliverability.pipeline import recheck_domains

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime

BATCH = 20


async def tick(runtime: Runtime, batch: int = BATCH) -> int:
    """Check one batch of due sending domains; returns how many were claimed (0 when none were due)."""
    return await recheck_domains(runtime, batch)
