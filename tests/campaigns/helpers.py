"""Helpers for the campaign tests: mailboxes and leads inserted as rows, everything else over real HTTP.

Mailboxes are inserted directly (their own operations test SMTP and IMAP logins against real servers, which
the campaign tests do not need); leads go in with any status and verification result.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_leads, leads, mailboxes, sends
from outreach_core.kernel.ids import new_id
from outreach_core.targets.rules import normalize_email, search_text, sort_name
from tests.conftest import WorkspaceHandle
from tests.lists.helpers import call, ok

__all__ = ["add_lead", "add_mailbox", "call", "campaign_lead_rows", "new_campaign", "ok", "write_send"]


async def add_mailbox(
    ws: WorkspaceHandle,
    email: str,
    *,
    status: str = "active",
    display_name: str | None = None,
    signature: str | None = None,
) -> str:
    address, domain = normalize_email(email) or (email, "")
    row = {
        "id": new_id("mbx"),
        "email": address,
        "domain": domain,
        "display_name": display_name,
        "provider": "smtp",
        "status": status,
        "ramp_started_on": "2026-01-01",
        "signature": signature,
        "smtp_host": "smtp.example.test",
        "smtp_port": 465,
        "smtp_security": "tls",
        "smtp_user": address,
        "imap_host": "imap.example.test",
        "imap_port": 993,
        "imap_security": "tls",
        "imap_user": address,
        "password_encrypted": "not-a-real-token",
        "created_at": datetime.now(UTC),
    }

    async def insert(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(scoped(ctx, mailboxes).insert(row))

    await ws.runtime.execute(await ws.principal(), insert)
    return str(row["id"])


async def add_lead(
    ws: WorkspaceHandle,
    email: str,
    *,
    status: str = "active",
    verify: str = "unknown",
    first_name: str | None = None,
    last_name: str | None = None,
    company: str | None = None,
    custom: dict[str, Any] | None = None,
    timezone: str | None = None,
) -> str:
    parsed = normalize_email(email)
    assert parsed is not None, email
    address, domain = parsed
    row = {
        "id": new_id("lead"),
        "email": address,
        "domain": domain,
        "first_name": first_name,
        "last_name": last_name,
        "company": company,
        "custom": custom or {},
        "sort_name": sort_name(first_name, last_name),
        "search_text": search_text(address, first_name, last_name, company),
        "status": status,
        "verify_status": verify,
        "timezone": timezone,
        "created_at": datetime.now(UTC),
    }

    async def insert(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(scoped(ctx, leads).insert(row))

    await ws.runtime.execute(await ws.principal(), insert)
    return str(row["id"])


async def new_campaign(http: httpx.AsyncClient, ws: WorkspaceHandle, name: str = "Outbound") -> str:
    return str((await ok(http, ws, "POST", "/campaigns", {"name": name}))["id"])


async def campaign_lead_rows(ws: WorkspaceHandle, campaign_id: str) -> list[Any]:
    async def read(ctx: WorkspaceContext) -> list[Any]:
        t = scoped(ctx, campaign_leads)
        result = await ctx.conn.execute(
            t.select().where(campaign_leads.c.campaign_id == campaign_id).order_by(campaign_leads.c.added_at)
        )
        return list(result.all())

    return await ws.runtime.read(await ws.principal(), read)


async def write_send(ws: WorkspaceHandle, campaign_lead_id: str, **fields: Any) -> str:
    """Record a send as the sender worker does (for reading it back through the API)."""

    async def insert(ctx: WorkspaceContext) -> str:
        cl = (
            await ctx.conn.execute(
                scoped(ctx, campaign_leads).select().where(campaign_leads.c.id == campaign_lead_id)
            )
        ).one()
        send_id = new_id("snd")
        await ctx.conn.execute(
            scoped(ctx, sends).insert(
                {
                    "id": send_id,
                    "campaign_id": cl.campaign_id,
                    "campaign_lead_id": cl.id,
                    "lead_id": cl.lead_id,
                    "step": 0,
                    "message_id": f"<{send_id}@example.test>",
                    "to_email": "x@example.test",
                    "subject": "Hello",
                    "body_html": "<p>Hello</p>",
                    "body_text": "Hello",
                    "status": "sent",
                    "created_at": datetime.now(UTC),
                    **fields,
                }
            )
        )
        return send_id

    return await ws.runtime.execute(await ws.principal(), insert)
