"""What `/readyz` and `/metrics` ask the database (self-hosting kit, issue 30): whether it answers with its
migrations at head, and how much work waits in the queues. Read-only, across workspaces (operator views)."""

from __future__ import annotations

import functools

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import func, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from outreach_core.kernel.db.migrate import alembic_config
from outreach_core.kernel.db.tables import import_queue, outbox, webhook_deliveries

__all__ = ["head_revisions", "migration_problem", "queue_depths"]


@functools.cache
def head_revisions() -> frozenset[str]:
    """The revisions this code's migrations end at."""
    return frozenset(ScriptDirectory.from_config(alembic_config()).get_heads())


async def migration_problem(engine: AsyncEngine) -> str | None:
    """None when the database answers and its migrations are at head; otherwise why not, in one line.

    Raises what the driver raises when the database cannot be reached (the caller words it)."""

    def current(sync_conn: Connection) -> frozenset[str]:
        return frozenset(MigrationContext.configure(sync_conn).get_current_heads())

    async with engine.connect() as conn:
        revisions = await conn.run_sync(current)
    heads = head_revisions()
    if revisions == heads:
        return None
    found = ", ".join(sorted(revisions)) or "none"
    return f"migrations not at head: database at {found}, code at {', '.join(sorted(heads))}"


async def queue_depths(engine: AsyncEngine) -> dict[str, int]:
    """Work waiting, by queue: `imports` (received import parts not merged yet), `outbox` (events not
    dispatched to webhooks yet), `webhooks` (deliveries still to be posted, retries included)."""
    statements = {
        "imports": select(func.count()).select_from(import_queue),
        "outbox": select(func.count()).select_from(outbox).where(outbox.c.dispatched_at.is_(None)),
        "webhooks": select(func.count())
        .select_from(webhook_deliveries)
        .where(webhook_deliveries.c.next_attempt_at.is_not(None)),
    }
    depths: dict[str, int] = {}
    async with engine.connect() as conn:
        for name, statement in statements.items():
            depths[name] = int((await conn.execute(statement)).scalar_one())
    return depths
