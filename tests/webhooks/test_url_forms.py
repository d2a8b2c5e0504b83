"""Webhook URLs whose host only looks harmless (issue 25, item 2): Unicode spellings of loopback addresses,
legacy numeric IPv4 forms and IPv6 forms that carry a private address or a zone. Refused at creation through
REST and MCP with the documented 422; and for a URL stored before the check existed (written straight into
the table), neither `test_webhook` nor the worker's delivery ever opens a connection: a real TCP listener on
127.0.0.1 and 127.0.0.2 counts every one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from outreach_core.kernel.db.tables import webhooks
from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace, WorkspaceHandle, free_port
from tests.doors import call_mcp
from tests.webhooks.conftest import CreateHook, MakeRuntime, run_worker
from tests.webhooks.helpers import delivery_rows, new_lead, won

# The six forms of the report, written with escapes: full-width digits and full stop, ideographic full
# stop, half-width ideographic full stop, circled digits (the last one is 127.0.0.2).
UNICODE_FORMS = [
    "\uff11\uff12\uff17.\uff10.\uff10.\uff11",
    "127\u30020\u30020\u30021",
    "127\uff0e0\uff0e0\uff0e1",
    "127\uff610\uff610\uff611",
    "\u2460\u2461\u2466.0.0.1",
    "\u2460\u2461\u2466.\u24ea.\u24ea.\u2461",
]
LEGACY_FORMS = [
    "2130706433",
    "0x7f.0.0.1",
    "127.1",
    "127.0.1",
    "0177.0.0.1",
    "0x7f000001",
    "017700000001",
    "127.000.000.001",
    "127.0.0.1.",
]
IPV6_FORMS = [
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:127.0.0.1]",
    "[::127.0.0.1]",
    "[64:ff9b::127.0.0.1]",
    "[2002:7f00:1::1]",
    "[fe80::1%25eth0]",
    "[2606:4700:4700::1111%25eth0]",
]
NOT_PUBLIC_NAMES = ["intranet", "hooks.internal", "crm.corp.local", "hooks.localhost"]
ALL_FORMS = UNICODE_FORMS + LEGACY_FORMS + IPV6_FORMS + NOT_PUBLIC_NAMES
STORED_FORMS = [*UNICODE_FORMS, "2130706433", "127.1", "0x7f.0.0.1", "[::ffff:127.0.0.1]"]


def _refusal_names_the_host(fields: list[dict[str, Any]], host: str) -> None:
    assert [f["path"] for f in fields] == ["url"], fields
    message = fields[0]["message"]
    assert message.startswith("This URL cannot receive webhooks: ")
    assert host.strip("[]").replace("%25", "%") in message.replace("%25", "%"), message


@pytest.mark.parametrize("host", ALL_FORMS)
async def test_each_form_is_refused_at_creation_through_rest_and_mcp(
    host: str, http: httpx.AsyncClient, mcp_session: Callable[..., Any], make_workspace: MakeWorkspace
) -> None:
    """On a server with the default settings (no private URLs)."""
    ws = await make_workspace()
    url = f"https://{host}:8443/hook"
    body = {"url": url, "events": ["lead.won"]}
    refused = await http.post("/api/v1/webhooks", headers=ws.headers, json=body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["code"] == "invalid_input"
    _refusal_names_the_host(refused.json()["error"]["details"]["fields"], host)

    good = {"url": "https://crm.example.com/hooks", "events": ["lead.won"]}
    hook = (await http.post("/api/v1/webhooks", headers=ws.headers, json=good)).json()["webhook"]
    patched = await http.patch(f"/api/v1/webhooks/{hook['id']}", headers=ws.headers, json={"url": url})
    assert patched.status_code == 422, patched.text
    _refusal_names_the_host(patched.json()["error"]["details"]["fields"], host)

    async with mcp_session(ws.api_key) as client:
        failed, created = await call_mcp(client, "create_webhook", {"url": url, "events": ["lead.won"]})
        assert failed and created["error"]["code"] == "invalid_input"
        _refusal_names_the_host(created["error"]["details"]["fields"], host)
        failed, updated = await call_mcp(client, "update_webhook", {"id": hook["id"], "url": url})
        assert failed and updated["error"]["code"] == "invalid_input"

    listed = (await http.get("/api/v1/webhooks", headers=ws.headers)).json()["webhooks"]
    assert [(h["id"], h["url"]) for h in listed] == [(hook["id"], good["url"])]  # nothing else stored


@pytest.mark.parametrize("host", UNICODE_FORMS + LEGACY_FORMS)
async def test_the_forms_are_refused_even_where_private_urls_are_allowed(
    host: str, hook_http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """They can never be what the person meant: a client reads them as another host than they show."""
    ws = await make_workspace()
    body = {"url": f"http://{host}:8080/hook", "events": ["lead.won"]}
    refused = await hook_http.post("/api/v1/webhooks", headers=ws.headers, json=body)
    assert refused.status_code == 422, refused.text
    _refusal_names_the_host(refused.json()["error"]["details"]["fields"], host)


class Listener:
    """A TCP server on 127.0.0.1 and 127.0.0.2 (one port) that counts every connection and answers any
    request `200 ok`, as a service on the server's own network would."""

    def __init__(self) -> None:
        self.connections: list[str] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        for _ in range(20):
            port = free_port()
            try:
                self._server = await asyncio.start_server(self._accept, ["127.0.0.1", "127.0.0.2"], port)
            except OSError:
                continue
            self.port = port
            return
        raise RuntimeError("no port free on both 127.0.0.1 and 127.0.0.2")

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections.append(str(writer.get_extra_info("sockname")[0]))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            await writer.drain()
        writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    found = Listener()
    await found.start()
    yield found
    await found.stop()


async def _store_url(rt: Runtime, hook_id: str, url: str) -> None:
    """As a URL saved before the check existed: written straight into the table."""
    async with rt.engine.begin() as conn:
        await conn.execute(update(webhooks).where(webhooks.c.id == hook_id).values(url=url))


async def _stored_hook(http: httpx.AsyncClient, rt: Runtime, ws: WorkspaceHandle, url: str) -> str:
    body = {"url": "https://crm.example.com/hooks", "events": ["lead.won"]}
    created = await http.post("/api/v1/webhooks", headers=ws.headers, json=body)
    hook_id: str = created.json()["webhook"]["id"]
    await _store_url(rt, hook_id, url)
    return hook_id


@pytest.mark.parametrize("host", STORED_FORMS)
async def test_test_webhook_never_connects_to_a_stored_url_of_these_forms(
    host: str,
    http: httpx.AsyncClient,
    mcp_session: Callable[..., Any],
    make_workspace: MakeWorkspace,
    runtime: Runtime,
    listener: Listener,
) -> None:
    ws = await make_workspace()
    hook_id = await _stored_hook(http, runtime, ws, f"http://{host}:{listener.port}/hook")

    result = (await http.post(f"/api/v1/webhooks/{hook_id}/test", headers=ws.headers)).json()
    assert result["delivered"] is False and result["status"] == 0, result
    assert result["error"].startswith("refused: "), result
    async with mcp_session(ws.api_key) as client:
        failed, answer = await call_mcp(client, "test_webhook", {"id": hook_id})
    assert not failed and answer["delivered"] is False and answer["error"] == result["error"]
    assert listener.connections == []


@pytest.mark.parametrize("host", STORED_FORMS)
async def test_the_worker_never_delivers_to_a_stored_url_of_these_forms(
    host: str,
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    listener: Listener,
) -> None:
    """The event is queued for the endpoint; the worker of a server without private URLs records a refused
    attempt and opens no connection."""
    ws = await make_workspace()
    created = await create_hook(ws, "http://127.0.0.1:9/placeholder")
    hook_id = created["webhook"]["id"]
    rt = make_runtime(FixedClock(datetime.now(UTC)), allow_private_urls=False)
    await _store_url(rt, hook_id, f"http://{host}:{listener.port}/hook")
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])

    await run_worker(rt)

    [row] = await delivery_rows(rt, hook_id)
    assert (row.status, row.last_status, row.attempts) == ("pending", 0, 1)
    assert row.last_error.startswith("refused: "), row.last_error
    assert listener.connections == []
