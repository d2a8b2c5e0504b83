"""Writes remembered `lastUsedAt` times of API keys and OAuth grants (see `outreach_core.kernel.usage`), and
the refresh tokens Google or Microsoft rotated for OAuth mailboxes (`mailboxes/oauth_tokens.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.api_keys.usage import flush_usage
from outreach_core.mailboxes.oauth_tokens import keep_rotated_tokens, rotated_pending

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """Flush every pending last-used time in one transaction; return how many were pending.

    If the write fails (or is cancelled) the values are put back into the tracker, keeping any newer time
    recorded meanwhile, so the next tick writes them again and nothing is lost.
    """
    rotated = (
        await runtime.system(keep_rotated_tokens) if rotated_pending() else 0
    )  # OAuth mailboxes (issue 32)
    pending = runtime.usage.take_pending()
    if not pending:
        return rotated
    try:
        await runtime.system(flush_usage, pending)
    except BaseException:
        runtime.usage.restore(pending)
        raise
    return len(pending) + rotated
