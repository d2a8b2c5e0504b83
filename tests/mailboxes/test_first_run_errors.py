"""First-run mailbox errors say what to do (issue 15, item 6): `POST /mailboxes/test` as a person calls it,
against servers configured as in production (private hosts refused; only the system's CAs trusted)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from outreach_app.adapters import MailLoginClient
from outreach_app.asgi import build_app
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace, free_port, served_ports, serving
from tests.dns_server import DnsServer
from tests.mail_servers import MailServers


@asynccontextmanager
async def served_with(runtime: Runtime, dns_server: DnsServer, mail: MailLoginClient) -> AsyncIterator[str]:
    """The whole app on its own port, sharing the test database, with `mail` as its login tester."""
    port = free_port()
    settings = runtime.settings.model_copy(update={"public_url": f"http://127.0.0.1:{port}"})
    served = Runtime(settings, engine=runtime.engine, ports=served_ports(settings, dns_server, mail=mail))
    async with serving(build_app(served, flush_usage=False), port) as url:
        yield url


async def login_test(url: str, api_key: str, body: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        response = await client.post(
            "/api/v1/mailboxes/test", headers={"Authorization": f"Bearer {api_key}"}, json=body
        )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def test_a_loopback_mail_host_names_the_setting_that_allows_it(
    runtime: Runtime, dns_server: DnsServer, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    user, password = mail_servers.add_user()
    production = MailLoginClient(tls_ca_file=str(mail_servers.ca.ca_file), timeout_s=5.0)
    async with served_with(runtime, dns_server, production) as url:
        result = await login_test(url, ws.api_key, mail_servers.body(user, password))
    assert result["ok"] is False
    for problem in (result["smtp"], result["imap"]):
        assert problem.startswith("refused: 127.0.0.1 is a loopback address")
        assert "set OUTREACH_ALLOW_PRIVATE_URLS=1 to allow private and loopback servers" in problem


async def test_a_certificate_from_a_private_ca_names_the_ca_setting(
    runtime: Runtime, dns_server: DnsServer, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    user, password = mail_servers.add_user()
    no_private_ca = MailLoginClient(timeout_s=5.0, allow_private=True)  # OUTREACH_TLS_CA_FILE not set
    async with served_with(runtime, dns_server, no_private_ca) as url:
        result = await login_test(url, ws.api_key, mail_servers.body(user, password))
    assert result["ok"] is False
    for problem in (result["smtp"], result["imap"]):
        assert problem.startswith("TLS error: the certificate of 127.0.0.1:") and "not accepted" in problem
        assert "set OUTREACH_TLS_CA_FILE to a file with that CA's certificate" in problem
