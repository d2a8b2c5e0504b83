"""Helpers shared by the list, label and suppression tests.

Leads are inserted as rows (through `scoped()`, in the runtime) rather than through `create_lead`, so these
tests can set any status and do not depend on the lead operations; everything else goes over real HTTP.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import label_timers, lead_labels, leads, list_leads, suppressions
from outreach_core.kernel.ids import new_id
from outreach_core.targets.rules import normalize_email, search_text, sort_name
from tests.conftest import WorkspaceHandle

API = "/api/v1"


async def add_leads(
    ws: WorkspaceHandle, *emails: str, status: str = "active", company: str | None = None
) -> list[str]:
    """Insert leads with all NOT NULL columns filled; returns their ids in the order given."""
    rows: list[dict[str, Any]] = []
    for raw in emails:
        parsed = normalize_email(raw)
        assert parsed is not None, raw
        email, domain = parsed
        rows.append(
            {
                "id": new_id("lead"),
                "email": email,
                "domain": domain,
                "company": company,
                "custom": {},
                "sort_name": sort_name(None, None),
                "search_text": search_text(email, None, None, company),
                "status": status,
                "created_at": datetime.now(UTC),
            }
        )

    async def insert(ctx: WorkspaceContext) -> None:
        table = scoped(ctx, leads)
        for row in rows:
            await ctx.conn.execute(table.insert(row))

    await ws.runtime.execute(await ws.principal(), insert)
    return [r["id"] for r in rows]


async def lead_rows(ws: WorkspaceHandle, ids: list[str]) -> dict[str, Any]:
    """`{id: row}` of the given leads of the workspace (status, updated_at, ...)."""

    async def read(ctx: WorkspaceContext) -> dict[str, Any]:
        table = scoped(ctx, leads)
        result = await ctx.conn.execute(table.select().where(leads.c.id.in_(ids)))
        return {r.id: r for r in result.all()}

    return await ws.runtime.read(await ws.principal(), read)


async def statuses(ws: WorkspaceHandle, ids: list[str]) -> list[str]:
    rows = await lead_rows(ws, ids)
    return [rows[i].status for i in ids]


async def members_of(ws: WorkspaceHandle, list_id: str) -> set[str]:
    async def read(ctx: WorkspaceContext) -> set[str]:
        table = scoped(ctx, list_leads)
        result = await ctx.conn.execute(
            table.select(list_leads.c.lead_id).where(list_leads.c.list_id == list_id)
        )
        return set(result.scalars().all())

    return await ws.runtime.read(await ws.principal(), read)


async def lists_of(ws: WorkspaceHandle, lead_id: str) -> set[str]:
    async def read(ctx: WorkspaceContext) -> set[str]:
        table = scoped(ctx, list_leads)
        result = await ctx.conn.execute(
            table.select(list_leads.c.list_id).where(list_leads.c.lead_id == lead_id)
        )
        return set(result.scalars().all())

    return await ws.runtime.read(await ws.principal(), read)


async def carriers(ws: WorkspaceHandle, label_id: str) -> set[str]:
    """Ids of the leads that carry `label_id`."""

    async def read(ctx: WorkspaceContext) -> set[str]:
        table = scoped(ctx, lead_labels)
        result = await ctx.conn.execute(
            table.select(lead_labels.c.lead_id).where(lead_labels.c.label_id == label_id)
        )
        return set(result.scalars().all())

    return await ws.runtime.read(await ws.principal(), read)


async def timers(ws: WorkspaceHandle) -> list[tuple[str, str, str, str | None, datetime]]:
    """`(lead_id, label_id, action, target_label_id, due_at)` of the workspace's pending timers."""

    async def read(ctx: WorkspaceContext) -> list[tuple[str, str, str, str | None, datetime]]:
        t = scoped(ctx, label_timers)
        result = await ctx.conn.execute(
            t.select(
                label_timers.c.lead_id,
                label_timers.c.label_id,
                label_timers.c.action,
                label_timers.c.target_label_id,
                label_timers.c.due_at,
            ).order_by(label_timers.c.due_at, label_timers.c.action, label_timers.c.lead_id)
        )
        return [tuple(r) for r in result.all()]

    return await ws.runtime.read(await ws.principal(), read)


async def suppressed_values(ws: WorkspaceHandle) -> dict[str, tuple[str, str | None]]:
    """`{value: (kind, reason)}` of the workspace's suppression list."""

    async def read(ctx: WorkspaceContext) -> dict[str, tuple[str, str | None]]:
        s = scoped(ctx, suppressions)
        result = await ctx.conn.execute(
            s.select(suppressions.c.value, suppressions.c.kind, suppressions.c.reason)
        )
        return {r.value: (r.kind, r.reason) for r in result.all()}

    return await ws.runtime.read(await ws.principal(), read)


async def call(
    http: httpx.AsyncClient,
    ws: WorkspaceHandle,
    method: str,
    path: str,
    body: Any = None,
    params: dict[str, Any] | None = None,
) -> tuple[int, Any]:
    response = await http.request(method, API + path, headers=ws.headers, json=body, params=params)
    return response.status_code, response.json()


async def ok(
    http: httpx.AsyncClient,
    ws: WorkspaceHandle,
    method: str,
    path: str,
    body: Any = None,
    params: dict[str, Any] | None = None,
) -> Any:
    status, payload = await call(http, ws, method, path, body, params)
    assert status == 200, (method, path, status, payload)
    return payload


async def new_list(http: httpx.AsyncClient, ws: WorkspaceHandle, name: str) -> str:
    return str((await ok(http, ws, "POST", "/lists", {"name": name}))["id"])


async def new_label(http: httpx.AsyncClient, ws: WorkspaceHandle, name: str, **fields: Any) -> str:
    return str((await ok(http, ws, "POST", "/labels", {"name": name, **fields}))["id"])
