"""Small helpers for the webhook tests: leads and events over REST, rows read back."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import select

from outreach_core.kernel.db.tables import webhook_attempts, webhook_deliveries, webhooks
from outreach_core.kernel.runtime import Runtime
from tests.conftest import WorkspaceHandle

_n = itertools.count()


async def new_lead(http: httpx.AsyncClient, ws: WorkspaceHandle, **fields: Any) -> dict[str, Any]:
    body = {"email": f"lead{next(_n)}@hooks.example", "firstName": "Ada", "company": "Engines", **fields}
    response = await http.post("/api/v1/leads", headers=ws.headers, json=body)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def won(http: httpx.AsyncClient, ws: WorkspaceHandle, lead_id: str, **body: Any) -> None:
    response = await http.post(f"/api/v1/leads/{lead_id}/won", headers=ws.headers, json=body)
    assert response.status_code == 200, response.text


async def deliveries(http: httpx.AsyncClient, ws: WorkspaceHandle, hook_id: str) -> list[dict[str, Any]]:
    response = await http.get(f"/api/v1/webhooks/{hook_id}/deliveries", headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()["deliveries"]  # type: ignore[no-any-return]


async def hook(http: httpx.AsyncClient, ws: WorkspaceHandle, hook_id: str) -> dict[str, Any]:
    listed = (await http.get("/api/v1/webhooks", headers=ws.headers)).json()["webhooks"]
    return next(h for h in listed if h["id"] == hook_id)  # type: ignore[no-any-return]


async def delivery_rows(rt: Runtime, hook_id: str) -> list[Any]:
    async with rt.engine.connect() as conn:
        found = await conn.execute(
            select(webhook_deliveries)
            .where(webhook_deliveries.c.webhook_id == hook_id)
            .order_by(webhook_deliveries.c.created_at, webhook_deliveries.c.id)
        )
        return list(found.all())


async def attempt_rows(rt: Runtime, delivery_id: str) -> list[Any]:
    async with rt.engine.connect() as conn:
        found = await conn.execute(
            select(webhook_attempts)
            .where(webhook_attempts.c.delivery_id == delivery_id)
            .order_by(webhook_attempts.c.at)
        )
        return list(found.all())


async def hook_row(rt: Runtime, hook_id: str) -> Any:
    async with rt.engine.connect() as conn:
        return (await conn.execute(select(webhooks).where(webhooks.c.id == hook_id))).one()


def iso(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def seed_delivery(ws: WorkspaceHandle, hook_id: str, status: str = "failed") -> str:
    """A delivery of a made-up `lead.won` event with one failed attempt, as the worker would leave it."""
    from outreach_core.kernel.context import WorkspaceContext, scoped
    from outreach_core.kernel.ids import new_id
    from outreach_core.webhooks.rules import body_bytes

    now = datetime.now(UTC)
    event_id, delivery_id = new_id("evt"), new_id("whd")
    body = body_bytes(event_id, "lead.won", now, ws.workspace_id, {"lead": {"id": "lead_seeded"}})

    async def write(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            scoped(ctx, webhook_deliveries).insert(
                {
                    "id": delivery_id,
                    "webhook_id": hook_id,
                    "event_id": event_id,
                    "type": "lead.won",
                    "body": body.decode(),
                    "status": status,
                    "attempts": 1,
                    "round_attempts": 1,
                    "next_attempt_at": now if status == "pending" else None,
                    "last_status": 500,
                    "last_error": "HTTP 500",
                    "created_at": now,
                }
            )
        )
        await ctx.conn.execute(
            scoped(ctx, webhook_attempts).insert(
                {
                    "id": new_id("wha"),
                    "delivery_id": delivery_id,
                    "at": now,
                    "status": 500,
                    "ms": 12,
                    "error": "HTTP 500",
                }
            )
        )

    await ws.runtime.execute(await ws.principal(), write)
    return delivery_id
