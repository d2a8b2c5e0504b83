"""Helpers for enrichment tests: leads and imports written straight into a workspace (no lead operations)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.engine import Row

from outreach_core.kernel.context import SystemContext, WorkspaceContext, scoped, system_scope
from outreach_core.kernel.db.tables import domain_cache, lead_imports, leads
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.runtime import Runtime
from tests.conftest import WorkspaceHandle

# Server defaults of the columns a test may set on some rows only (the others default to NULL).
_DEFAULTS: dict[str, Any] = {
    "esp": "unknown",
    "verify_status": "unknown",
    "status": "active",
    "verify_api": False,
}


def unique_domain(tag: str, tld: str = "com") -> str:
    """A domain no other test uses (the domain cache is global and the database lives for the session)."""
    return f"{tag}-{uuid.uuid4().hex[:10]}.{tld}"


async def add_leads(ws: WorkspaceHandle, *rows: dict[str, Any]) -> list[str]:
    """Insert leads as an import would: every NOT NULL column, `enriched_at` NULL. Each row needs `email`;
    any other column may be given."""

    async def insert(ctx: WorkspaceContext) -> list[str]:
        full = [
            {
                "id": new_id("lead"),
                "domain": r["email"].rsplit("@", 1)[1],
                "custom": {},
                "sort_name": "",
                "search_text": r["email"],
                "created_at": ctx.now,
                **r,
            }
            for r in rows
        ]
        # executemany takes its columns from the first row: give every row the same keys
        keys = {k for r in full for k in r}
        full = [{k: r.get(k, _DEFAULTS.get(k)) for k in keys} for r in full]
        await ctx.conn.execute(*scoped(ctx, leads).insert_many(full))
        return [str(r["id"]) for r in full]

    return await ws.runtime.execute(await ws.principal(), insert)


async def lead_rows(ws: WorkspaceHandle, ids: list[str]) -> list[Row[Any]]:
    """The leads with `ids`, in that order."""

    async def read(ctx: WorkspaceContext) -> list[Row[Any]]:
        table = scoped(ctx, leads)
        found = {r.id: r for r in (await ctx.conn.execute(table.select().where(leads.c.id.in_(ids)))).all()}
        return [found[i] for i in ids]

    return await ws.runtime.read(await ws.principal(), read)


async def update_leads(ws: WorkspaceHandle, ids: list[str], **values: Any) -> None:
    async def write(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(scoped(ctx, leads).update().where(leads.c.id.in_(ids)).values(**values))

    await ws.runtime.execute(await ws.principal(), write)


async def add_import(ws: WorkspaceHandle, *, status: str, verify: bool) -> str:
    async def insert(ctx: WorkspaceContext) -> str:
        import_id = new_id("imp")
        await ctx.conn.execute(
            scoped(ctx, lead_imports).insert(
                {
                    "id": import_id,
                    "status": status,
                    "verify": verify,
                    "existing": "skip",
                    "created_at": ctx.now,
                }
            )
        )
        return import_id

    return await ws.runtime.execute(await ws.principal(), insert)


async def import_row(ws: WorkspaceHandle, import_id: str) -> Row[Any]:
    async def read(ctx: WorkspaceContext) -> Row[Any]:
        table = scoped(ctx, lead_imports)
        row: Row[Any] = (await ctx.conn.execute(table.select().where(lead_imports.c.id == import_id))).one()
        return row

    return await ws.runtime.read(await ws.principal(), read)


async def cache_row(runtime: Runtime, domain: str) -> Row[Any] | None:
    async def read(ctx: SystemContext) -> Row[Any] | None:
        cache = system_scope(domain_cache)
        stmt = cache.select().where(cache.c.domain == domain)
        row: Row[Any] | None = (await ctx.conn.execute(stmt)).one_or_none()
        return row

    return await runtime.system_read(read)
