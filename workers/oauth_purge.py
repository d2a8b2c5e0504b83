"""Deletes OAuth codes and tokens long expired, and registered clients that never completed a grant after
OUTREACH_OAUTH_UNUSED_CLIENT_TTL_S (grants stay: they are the record of a connection)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from outreach_core.oauth.server import purge_expired_oauth

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One purge; returns how many rows were deleted."""
    unused_after = timedelta(seconds=runtime.settings.oauth_unused_client_ttl_s)
    return await runtime.system(purge_expired_oauth, unused_clients_after=unused_after)
