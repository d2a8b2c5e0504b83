"""Flushing remembered `lastUsedAt` values (see `outreach_core.kernel.usage`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam

from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import api_keys, oauth_grants


async def flush_usage(ctx: SystemContext, pending: dict[tuple[str, str], datetime]) -> int:
    """Write pending last-used times in one batched UPDATE per table. Returns rows touched."""
    written = 0
    for kind, table in (("api_key", api_keys), ("grant", oauth_grants)):
        rows = [{"ident": ident, "used": when} for (k, ident), when in pending.items() if k == kind]
        if not rows:
            continue
        t = system_scope(table)
        stmt = (
            t.update()
            .where(t.c.id == bindparam("ident"))
            .where((t.c.last_used_at.is_(None)) | (t.c.last_used_at < bindparam("used")))
            .values(last_used_at=bindparam("used"))
        )
        await ctx.conn.execute(stmt, rows)
        written += len(rows)
    return written
