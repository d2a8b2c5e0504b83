"""Helpers for mailbox tests: bodies for the test mail servers, and mailboxes written without a login."""

from __future__ import annotations

from typing import Any

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import mailboxes
from outreach_core.kernel.ports import MailServer
from outreach_core.kernel.runtime import Runtime
from outreach_core.mailboxes.store import new_mailbox_row
from tests.conftest import WorkspaceHandle
from tests.mail_servers import HOST, closed_port

API = "/api/v1"


async def seed_mailbox(
    ws: WorkspaceHandle,
    email: str,
    *,
    password: str = "seeded-password-1",
    runtime: Runtime | None = None,
    **columns: Any,
) -> str:
    """A mailbox row written directly (no login test), on closed loopback ports unless `columns` say
    otherwise; `runtime` may carry a fixed clock."""
    rt = runtime or ws.runtime

    async def insert(ctx: WorkspaceContext) -> str:
        smtp = MailServer(HOST, closed_port(), "tls", email)
        imap = MailServer(HOST, closed_port(), "tls", email)
        row = new_mailbox_row(ctx, email, "smtp", None, 30, smtp, imap, password) | columns
        await ctx.conn.execute(scoped(ctx, mailboxes).insert(row))
        return str(row["id"])

    return await rt.execute(await ws.principal(), insert)


async def stored_row(ws: WorkspaceHandle, mailbox_id: str) -> Any:
    async def read(ctx: WorkspaceContext) -> Any:
        stmt = scoped(ctx, mailboxes).select().where(mailboxes.c.id == mailbox_id)
        return (await ctx.conn.execute(stmt)).one_or_none()

    return await ws.runtime.read(await ws.principal(), read)


async def create(http: httpx.AsyncClient, ws: WorkspaceHandle, body: dict[str, Any]) -> httpx.Response:
    return await http.post(f"{API}/mailboxes", headers=ws.headers, json=body)


async def listing(http: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, Any]:
    response = await http.get(f"{API}/mailboxes", headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def refused_body(email: str, password: str = "whatever-1") -> dict[str, Any]:
    """A smtp body whose servers refuse connections (no mail server needed)."""
    server = {"host": HOST, "security": "tls", "user": email}
    return {
        "provider": "smtp",
        "email": email,
        "password": password,
        "smtp": {**server, "port": closed_port()},
        "imap": {**server, "port": closed_port()},
    }


def field_paths(response: httpx.Response) -> list[str]:
    body = response.json()
    assert response.status_code == 422 and body["error"]["code"] == "invalid_input", body
    return [f["path"] for f in body["error"]["details"]["fields"]]
