"""Helpers for the sender tests: real mailboxes on the aiosmtpd test servers, campaigns over HTTP, rows."""

from __future__ import annotations

import email
import email.policy
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.crypto import encrypt
from outreach_core.kernel.db.tables import campaign_leads, campaigns, leads, mailboxes, sends
from outreach_core.kernel.ids import new_id
from tests.campaigns.helpers import add_lead, new_campaign, ok
from tests.conftest import WorkspaceHandle
from tests.mail_servers import SmtpServer, Users

__all__ = ["add_lead", "launched_campaign", "parse", "received_by", "rows", "smtp_mailbox", "update_rows"]

FIRST = {
    "subject": "Hello {{first_name|there}}",
    "body": "Hi {{first_name|there}},\n\nA short note about {{company|your team}}.\n\n{{unsubscribe}}",
}
FOLLOW_UP = {"subject": "", "body": "Just bumping this up."}


async def smtp_mailbox(
    ws: WorkspaceHandle,
    server: SmtpServer,
    users: Users,
    *,
    password: str | None = None,
    register: bool = True,
    **overrides: Any,
) -> str:
    """A mailbox row on `server` with a real encrypted password (the user is added to the server unless
    `register` is false), ramp off and a high limit unless overridden."""
    n = new_id("u")[-8:].lower()
    address = f"sender-{n}@mail.test"
    password = password or f"pw-{n}-secret"
    if register:
        users.add(address, password)
    row = {
        "id": new_id("mbx"),
        "email": address,
        "domain": "mail.test",
        "display_name": "Sam Sender",
        "provider": "smtp",
        "status": "active",
        "ramp_enabled": False,
        "daily_limit": 100,
        "ramp_started_on": "2026-01-01",
        "min_gap_s": 60,
        "max_gap_s": 120,
        "signature": "Sam<br>Sender Co",
        "smtp_host": server.host,
        "smtp_port": server.port,
        "smtp_security": server.security,
        "smtp_user": address,
        "imap_host": "127.0.0.1",
        "imap_port": 993,
        "imap_security": "tls",
        "imap_user": address,
        "password_encrypted": encrypt(ws.runtime.settings, password),
        "created_at": datetime.now(UTC),
        **overrides,
    }

    async def insert(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(scoped(ctx, mailboxes).insert(row))

    await ws.runtime.execute(await ws.principal(), insert)
    return str(row["id"])


async def launched_campaign(
    http: httpx.AsyncClient,
    ws: WorkspaceHandle,
    mailbox_ids: list[str],
    lead_ids: list[str],
    *,
    steps: list[dict[str, Any]] | None = None,
    launch: bool = True,
    **settings: Any,
) -> str:
    """A campaign sending all day every day (unless `settings` say otherwise) from `mailbox_ids` to
    `lead_ids`, launched."""
    cid = await new_campaign(http, ws)
    sequence = steps or [{"variants": [FIRST]}, {"waitDays": 2, "variants": [FOLLOW_UP]}]
    await ok(http, ws, "PUT", f"/campaigns/{cid}/sequence", {"steps": sequence})
    schedule = {"windowStart": 0, "windowEnd": 1440, "days": 127, "mailboxIds": mailbox_ids, **settings}
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", schedule)
    if lead_ids:
        await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": lead_ids})
    if launch:
        await ok(http, ws, "POST", f"/campaigns/{cid}/launch")
    return cid


def received_by(server: SmtpServer, address: str) -> list[EmailMessage]:
    """Messages `server` accepted for `address`, parsed."""
    with server.lock:
        found = [m for m in server.messages if address in m.rcpt_tos]
    return [parse(m.data) for m in found]


def parse(data: bytes) -> EmailMessage:
    message = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return message


_TABLES = {
    "sends": sends,
    "campaign_leads": campaign_leads,
    "mailboxes": mailboxes,
    "leads": leads,
    "campaigns": campaigns,
}


async def rows(ws: WorkspaceHandle, table: str, **where: Any) -> list[Any]:
    t = _TABLES[table]

    async def read(ctx: WorkspaceContext) -> list[Any]:
        stmt = scoped(ctx, t).select().where(*(t.c[k] == v for k, v in where.items()))
        return list((await ctx.conn.execute(stmt)).all())

    return await ws.runtime.read(await ws.principal(), read)


async def update_rows(ws: WorkspaceHandle, table: str, values: dict[str, Any], **where: Any) -> None:
    t = _TABLES[table]

    async def write(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(
            scoped(ctx, t).update().where(*(t.c[k] == v for k, v in where.items())).values(values)
        )

    await ws.runtime.execute(await ws.principal(), write)
