"""Deletes OAuth codes and tokens long expired (grants stay: they are the record of a connection)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.oauth.operations import purge_expired_oauth

if TYPE_CHECKING:
    from outreach_core.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One purge; returns how many rows were deleted."""
    return await runtime.system(purge_expired_oauth)
