"""What `/readyz` and `/metrics` ask the database (self-hosting kit, issue 30): whether it answers with its
migrations at head, and how much work waits in the queues. Read-only, across workspaces (operator views)."""

from __future__ import annotations

import functools

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import func, literal, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from outreach_core.kernel.db.migrate import alembic_config
from outreach_core.kernel.db.side_queue import PartHeader, above_marker, pending_parts, side_queue
from outreach_core.kernel.db.tables import import_queue, lead_imports, outbox, webhook_deliveries

__all__ = ["QUEUE_DEPTH_CAP", "head_revisions", "migration_problem", "queue_depths"]


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


QUEUE_DEPTH_CAP = 10_000
"""Queue depths are counted up to this: an exact count reads every waiting row (906 ms for 2.1 M waiting
rows on PostgreSQL under load, near `/metrics`' 3 s timeout; 10.6 ms up to this bound; PERFORMANCE.md,
"/readyz and /metrics on a large database"). A queue this deep is far behind either way."""


async def queue_depths(engine: AsyncEngine) -> dict[str, int]:
    """Work waiting, by queue: `imports` (received import parts not merged yet; on SQLite with those of the
    side file), `outbox` (events not
    dispatched to webhooks yet), `webhooks` (deliveries still to be posted, retries included); each counted
    up to `QUEUE_DEPTH_CAP` (a deeper queue reads as the cap), in one statement."""
    waiting = {
        "imports": select(literal(1)).select_from(import_queue),
        "outbox": select(literal(1)).select_from(outbox).where(outbox.c.dispatched_at.is_(None)),
        "webhooks": select(literal(1))
        .select_from(webhook_deliveries)
        .where(webhook_deliveries.c.next_attempt_at.is_not(None)),
    }
    statement = select(
        *(
            select(func.count())
            .select_from(rows.limit(QUEUE_DEPTH_CAP).subquery())
            .scalar_subquery()
            .label(name)
            for name, rows in waiting.items()
        )
    )
    # SQLite: the side file's parts read first, then the database's markers (`side_queue`: each part once)
    side = await _side_parts_waiting(engine) if engine.dialect.name == "sqlite" else []
    async with engine.connect() as conn:
        row = (await conn.execute(statement)).one()
        depths = {name: int(row._mapping[name]) for name in waiting}
        if side:
            markers = await conn.execute(
                select(lead_imports.c.id, lead_imports.c.merged_seq).where(
                    lead_imports.c.id.in_(sorted({p.import_id for p in side}))
                )
            )
            waiting_parts = above_marker(side, {str(r.id): r.merged_seq for r in markers.all()})
            depths["imports"] = min(QUEUE_DEPTH_CAP, depths["imports"] + len(waiting_parts))
    return depths


async def _side_parts_waiting(engine: AsyncEngine) -> list[PartHeader]:
    async with side_queue(engine).reading() as side:
        return await pending_parts(side)
