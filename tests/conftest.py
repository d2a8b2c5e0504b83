"""Shared fixtures: a migrated database (SQLite by default, PostgreSQL with OUTREACH_TEST_DATABASE_URL),
a runtime, a real uvicorn server on loopback serving the whole app, and workspace factories.

Tests isolate themselves by creating their own workspaces, so the database is migrated once per session.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import text

from outreach_core.auth.authenticate import authenticate_api_key
from outreach_core.kernel.context import Principal
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.workspace.setup import add_member, init_workspace
from tests.dns_server import DnsServer
from tests.mail_servers import (  # noqa: F401  (fixtures used by every test package)
    MailCA,
    dovecot,
    mail_ca,
    mail_servers,
    mail_users,
    smtp_servers,
    smtputf8_server,
)

PG_URL = os.environ.get("OUTREACH_TEST_DATABASE_URL")
_counter = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session", autouse=True)
def quiet_logs() -> None:
    """Request logs go to stderr at WARNING during tests; failures still show them."""
    from http_api.request_log import configure_logging

    configure_logging("WARNING", json=False)


@pytest.fixture(scope="session", autouse=True)
def local_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The servers and commands the tests start keep their local state (PostgreSQL's tracking journals,
    import progress) in a directory of the session's, not in the user's ~/.local/state."""
    directory = tmp_path_factory.mktemp("state")
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(directory)
    yield directory
    if before is None:
        del os.environ["XDG_STATE_HOME"]
    else:
        os.environ["XDG_STATE_HOME"] = before


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    if PG_URL:
        return PG_URL
    return f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'outreach.db'}"


@pytest.fixture(scope="session")
def live_port() -> int:
    return free_port()


@pytest.fixture(scope="session")
def settings(database_url: str, live_port: int, mail_ca: MailCA) -> Settings:  # noqa: F811
    return Settings(
        database_url=database_url,
        tls_ca_file=str(mail_ca.ca_file),
        mail_login_timeout_s=5.0,
        secret_key="test-secret-key-not-for-production",
        public_url=f"http://127.0.0.1:{live_port}",
        rate_limit_per_minute=1_000_000,
        rate_limit_burst=1_000_000,
        oauth_registrations_per_hour=1_000_000,
        log_json=False,
        sender_idle_nap_s=0,
        webhook_timeout_s=2.0,
        # Google mailboxes over OAuth (issue 32 item 3): configured, so that start_mailbox_oauth answers a URL
        # (never opened: tests/mailboxes/test_oauth_mailboxes.py serves its own provider)
        google_client_id="session-google-client",
        google_client_secret="session-google-secret",
    )


async def reset_database(runtime: Runtime) -> None:
    if runtime.is_sqlite:
        return
    async with runtime.engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))


def served_ports(settings: Settings, dns_server: DnsServer, **overrides: Any) -> Ports:
    """The real adapters a served runtime uses, pointed at the test servers: DNS at `dns_server`, mail
    logins trusting the test CA and allowed to reach loopback; outgoing HTTP (webhook tests) as the
    settings say, resolving through `dns_server`."""
    from outreach_app.adapters import DnspythonResolver, ImapSentAppender, MailLoginClient, SmtpMailSender
    from outreach_app.adapters.http import GuardedHttpClient
    from outreach_app.adapters.oauth import AuthlibOAuthClient

    mail = MailLoginClient(
        tls_ca_file=settings.tls_ca_file, timeout_s=settings.mail_login_timeout_s, allow_private=True
    )
    smtp = SmtpMailSender(tls_ca_file=settings.tls_ca_file, timeout_s=5.0, allow_private=True)
    return Ports(
        **{
            "dns": DnspythonResolver(dns_server.nameservers, timeout_s=1.0),
            "http": GuardedHttpClient(
                tls_ca_file=settings.tls_ca_file,
                allow_private_urls=settings.allow_private_urls,
                dns=DnspythonResolver(dns_server.nameservers, timeout_s=1.0),
            ),
            "mail": mail,
            "smtp": smtp,
            "imap": ImapSentAppender(tls_ca_file=settings.tls_ca_file, timeout_s=10.0, allow_private=True),
            "oauth": AuthlibOAuthClient.from_settings(settings),
            **overrides,
        }
    )


@pytest.fixture(scope="session")
async def runtime(settings: Settings, dns_server: DnsServer) -> AsyncIterator[Runtime]:
    rt = Runtime(settings, ports=served_ports(settings, dns_server))
    await reset_database(rt)
    await migrate(rt.engine)
    yield rt
    await rt.dispose()


@dataclass
class WorkspaceHandle:
    """A workspace and one of its members, with that member's API key."""

    runtime: Runtime
    api_key: str
    workspace_id: str
    user_id: str
    slug: str
    role: str
    email: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    async def principal(self) -> Principal:
        return await self.runtime.system_read(authenticate_api_key, self.api_key)

    async def add_member(self, role: str = "member") -> WorkspaceHandle:
        n = next(_counter)
        email = f"member{n}-{os.getpid()}@example.com"
        added = await self.runtime.system(
            add_member, workspace=self.workspace_id, email=email, name=f"Member {n}", role=role
        )
        return WorkspaceHandle(
            self.runtime, added.apiKey, self.workspace_id, added.userId, self.slug, role, email
        )


MakeWorkspace = Callable[..., Awaitable[WorkspaceHandle]]


@pytest.fixture
def make_workspace(runtime: Runtime) -> MakeWorkspace:
    async def make(plan: str | None = "growth", name: str | None = None) -> WorkspaceHandle:
        n = next(_counter)
        email = f"owner{n}-{os.getpid()}@example.com"
        result = await runtime.system(
            init_workspace,
            email=email,
            name=f"Owner {n}",
            workspace=name or f"Workspace {n}",
            slug=f"ws-{os.getpid()}-{n}",
            plan=plan,
        )
        return WorkspaceHandle(
            runtime, result.apiKey, result.workspaceId, result.userId, result.slug, "owner", email
        )

    return make


@pytest.fixture(scope="session")
async def app(runtime: Runtime) -> Any:
    from outreach_app.asgi import build_app

    return build_app(runtime, flush_usage=False)  # tests flush explicitly with workers.usage_flush.tick


@asynccontextmanager
async def serving(app: Any, port: int | None = None, **config: Any) -> AsyncIterator[str]:
    """`app` behind a real uvicorn server on 127.0.0.1:`port` (a free one by default), in this event loop
    (`config`: uvicorn's options, e.g. `ssl_certfile`/`ssl_keyfile`); yields its base URL."""
    port = port or free_port()
    options = {"log_config": None, "lifespan": "on", "access_log": False, **config}
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **options))
    task = asyncio.create_task(server.serve())
    for _ in range(200):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    else:
        raise RuntimeError("uvicorn did not start")
    try:
        yield f"{'https' if 'ssl_certfile' in config else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)


@pytest.fixture(scope="session")
async def live_server(app: Any, live_port: int) -> AsyncIterator[str]:
    async with serving(app, live_port) as url:
        yield url


@pytest.fixture
async def http(live_server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=live_server, timeout=30) as client:
        yield client


@pytest.fixture
def mcp_session(live_server: str) -> Callable[..., Any]:
    """`async with mcp_session(token) as client:` — an MCP client over streamable HTTP with a bearer token."""

    @asynccontextmanager
    async def open_session(token: str, **client_kwargs: Any) -> AsyncIterator[Client]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as hc:
            transport = streamable_http_client(f"{live_server}/mcp", http_client=hc)
            async with Client(transport, **client_kwargs) as client:
                yield client

    return open_session


@pytest.fixture(scope="session")
def dns_server() -> Iterator[DnsServer]:
    """A real authoritative DNS server on loopback UDP; tests add the records they need."""
    server = DnsServer(free_port())
    server.start()
    yield server
    server.stop()


SUBPROCESS_DNS_ENV = "TEST_DNS_NAMESERVERS"
"""Where `tests.test_cli._env` finds the nameservers of the processes the tests start."""


@pytest.fixture(scope="session", autouse=True)
def _subprocess_dns(dns_server: DnsServer) -> Iterator[None]:
    """The `outreach serve` and `outreach worker` processes tests start resolve through `dns_server` too:
    their enrich workers share the session database's domain cache (and its noted domains), where the
    system resolver's answers (NXDOMAIN for every name on a machine without a network) would be cached
    for domains later tests serve from `dns_server`."""
    os.environ[SUBPROCESS_DNS_ENV] = dns_server.nameservers
    yield
    os.environ.pop(SUBPROCESS_DNS_ENV, None)


@pytest.fixture(scope="session")
def dns_runtime(runtime: Runtime, dns_server: DnsServer) -> Runtime:
    """The session database with a DNS port pointed at `dns_server` (as OUTREACH_DNS_NAMESERVERS)."""
    from outreach_app.adapters import DnspythonResolver

    return Runtime(
        runtime.settings.model_copy(update={"dns_nameservers": dns_server.nameservers}),
        engine=runtime.engine,
        ports=Ports(dns=DnspythonResolver(dns_server.nameservers, timeout_s=1.0)),
    )


@pytest.fixture(scope="session")
def tmp_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="outreach-test-"))


async def merge_every_queued_import_part(runtime: Runtime) -> None:
    """Enrichment, verification and the search index wait while any import of the server is being stored
    (storing comes first, issue 31). The session database is shared, so a test of those workers first merges
    what earlier tests left queued (the import worker, as the server would) instead of depending on how long
    ago they ran."""
    from workers import imports

    for _ in range(1_000):
        if await imports.tick(runtime) == 0:
            return
    raise AssertionError("the import worker did not run dry")
