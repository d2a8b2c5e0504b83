"""Routes the mailboxes waiting for a sending IP once one has room (`outreach_core/mailboxes/routes.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.mailboxes.routes import route_waiting_mailboxes

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One pass: every waiting mailbox that a sending IP has room for is routed; returns how many."""
    return await runtime.system(route_waiting_mailboxes)
