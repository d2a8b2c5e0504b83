"""Small helpers for verification tests: leads and imports inserted directly (scoped, in a transaction)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import lead_imports, leads, lists
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.runtime import Runtime
from outreach_core.targets.list_members import add_to_list
from tests.conftest import WorkspaceHandle
from workers import verify


def unique(tag: str) -> str:
    """A domain no other test uses (the domain cache is shared by the whole database)."""
    return f"{tag}-{uuid.uuid4().hex[:10]}.test"


async def add_leads(
    ws: WorkspaceHandle,
    emails: list[str],
    *,
    verify_status: str = "verifying",
    verify_api: bool = False,
    import_id: str | None = None,
    verified_at: datetime | None = None,
) -> list[str]:
    """Insert leads as stored by the service (no validation: bad addresses are allowed on purpose)."""

    async def insert(ctx: WorkspaceContext) -> list[str]:
        rows = [
            {
                "id": new_id("lead"),
                "email": email,
                "domain": email.rsplit("@", 1)[-1],
                "custom": {},
                "sort_name": "",
                "search_text": email,
                "created_at": ctx.now,
                "verify_status": verify_status,
                "verify_api": verify_api,
                "import_id": import_id,
                "verified_at": verified_at,
            }
            for email in emails
        ]
        await ctx.conn.execute(*scoped(ctx, leads).insert_many(rows))
        return [row["id"] for row in rows]

    return await ws.runtime.execute(await ws.principal(), insert)


async def add_import(ws: WorkspaceHandle) -> str:
    async def insert(ctx: WorkspaceContext) -> str:
        import_id = new_id("imp")
        row = {
            "id": import_id,
            "status": "enriching",
            "verify": True,
            "existing": "skip",
            "created_at": ctx.now,
        }
        await ctx.conn.execute(scoped(ctx, lead_imports).insert(row))
        return import_id

    return await ws.runtime.execute(await ws.principal(), insert)


async def add_list(ws: WorkspaceHandle, lead_ids: list[str]) -> str:
    async def insert(ctx: WorkspaceContext) -> str:
        list_id = new_id("list")
        await ctx.conn.execute(
            scoped(ctx, lists).insert({"id": list_id, "name": f"l-{list_id}", "created_at": ctx.now})
        )
        await add_to_list(ctx, list_id, scoped(ctx, leads).select(leads.c.id).where(leads.c.id.in_(lead_ids)))
        return list_id

    return await ws.runtime.execute(await ws.principal(), insert)


@dataclass(frozen=True)
class State:
    status: str
    reason: str | None
    verified_at: datetime | None
    api: bool


async def states(ws: WorkspaceHandle, ids: list[str]) -> list[State]:
    """Verification columns of `ids`, in the order given."""

    async def read(ctx: WorkspaceContext) -> dict[str, State]:
        t = scoped(ctx, leads)
        rows = await ctx.conn.execute(
            t.select(
                leads.c.id,
                leads.c.verify_status,
                leads.c.verify_reason,
                leads.c.verified_at,
                leads.c.verify_api,
            ).where(leads.c.id.in_(ids))
        )
        return {
            r.id: State(r.verify_status, r.verify_reason, r.verified_at, bool(r.verify_api)) for r in rows
        }

    found = await ws.runtime.read(await ws.principal(), read)
    return [found[i] for i in ids]


async def undeliverable(ws: WorkspaceHandle, import_id: str) -> int:
    async def read(ctx: WorkspaceContext) -> int:
        t = scoped(ctx, lead_imports)
        row = (
            await ctx.conn.execute(t.select(lead_imports.c.undeliverable).where(t.c.id == import_id))
        ).one()
        return int(row.undeliverable)

    return await ws.runtime.read(await ws.principal(), read)


async def drain(rt: Runtime, *, batch: int = 200, max_ticks: int = 100) -> int:
    """Tick until nothing is due; returns how many leads were handled in all."""
    total = 0
    for _ in range(max_ticks):
        handled = await verify.tick(rt, batch)
        if handled == 0:
            return total
        total += handled
    raise AssertionError("the verify worker did not run dry")
