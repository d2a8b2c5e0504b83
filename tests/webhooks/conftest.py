"""Fixtures for the webhook tests: real receivers on loopback (http; https with a certificate from the test
CA, trusted through OUTREACH_TLS_CA_FILE; https with an untrusted certificate; a server that closes the
connection), the whole app served with OUTREACH_ALLOW_PRIVATE_URLS=1, and worker runtimes on the session
database with a clock the test moves."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import trustme
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import delete

from outreach_app.adapters.http import GuardedHttpClient
from outreach_core.kernel.db.tables import webhooks
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from tests.conftest import WorkspaceHandle, free_port, serving
from tests.mail_servers import MailCA
from tests.webhooks.receiver import ClosingServer, Receiver
from workers import webhooks as worker


@pytest.fixture(scope="session")
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    async with serving(found, lifespan="off") as url:
        found.base_url = url
        yield found


@pytest.fixture(scope="session")
async def tls_receiver(mail_ca: MailCA) -> AsyncIterator[Receiver]:
    """HTTPS on 127.0.0.1 with the test CA's certificate (trusted through OUTREACH_TLS_CA_FILE)."""
    found = Receiver()
    options = {"ssl_certfile": str(mail_ca.cert_file), "ssl_keyfile": str(mail_ca.key_file)}
    async with serving(found, lifespan="off", **options) as url:
        found.base_url = url
        yield found


@pytest.fixture(scope="session")
async def untrusted_receiver() -> AsyncIterator[Receiver]:
    """HTTPS on 127.0.0.1 with a certificate from a CA nobody trusts."""
    directory = Path(tempfile.mkdtemp(prefix="outreach-untrusted-"))
    cert = trustme.CA().issue_cert("127.0.0.1", "localhost")
    cert.private_key_pem.write_to_path(str(directory / "key.pem"))
    with (directory / "cert.pem").open("wb") as f:
        for blob in cert.cert_chain_pems:
            f.write(blob.bytes())
    found = Receiver()
    options = {"ssl_certfile": str(directory / "cert.pem"), "ssl_keyfile": str(directory / "key.pem")}
    async with serving(found, lifespan="off", **options) as url:
        found.base_url = url
        yield found


@pytest.fixture(scope="session")
async def closing_server() -> AsyncIterator[ClosingServer]:
    server = ClosingServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="session")
def hook_settings(settings: Settings) -> Settings:
    """As a test or on-premises server runs: private URLs allowed, short timeout, a short schedule."""
    return settings.model_copy(
        update={
            "allow_private_urls": True,
            "webhook_timeout_s": 2.0,
            "webhook_retry_schedule": "60,120,240",
        }
    )


def _http(settings: Settings) -> GuardedHttpClient:
    return GuardedHttpClient(tls_ca_file=settings.tls_ca_file, allow_private_urls=settings.allow_private_urls)


@pytest.fixture(scope="session")
async def hook_runtime(runtime: Runtime, hook_settings: Settings) -> AsyncIterator[Runtime]:
    rt = Runtime(hook_settings, engine=runtime.engine, ports=Ports(http=_http(hook_settings)))
    yield rt
    await worker.drain(rt)
    if rt.ports.http is not None:
        await rt.ports.http.aclose()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
async def hook_server(hook_runtime: Runtime) -> AsyncIterator[str]:
    from outreach_app.asgi import build_app

    async with serving(build_app(hook_runtime, flush_usage=False), free_port()) as url:
        yield url


@pytest.fixture
async def hook_http(hook_server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=hook_server, timeout=30) as client:
        yield client


@pytest.fixture
def hook_mcp(hook_server: str) -> Callable[..., Any]:
    @asynccontextmanager
    async def open_session(token: str) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as hc,
            Client(streamable_http_client(f"{hook_server}/mcp", http_client=hc)) as client,
        ):
            yield client

    return open_session


MakeRuntime = Callable[..., Runtime]


@pytest.fixture
async def make_runtime(runtime: Runtime, hook_settings: Settings) -> AsyncIterator[MakeRuntime]:
    """`make_runtime(clock=FixedClock(...), **settings)`: a worker's runtime on the session database."""
    made: list[Runtime] = []

    def make(clock: FixedClock | None = None, **overrides: Any) -> Runtime:
        settings = hook_settings.model_copy(update=overrides)
        rt = Runtime(
            settings,
            engine=runtime.engine,
            ports=Ports(clock=clock or FixedClock(datetime.now(UTC)), http=_http(settings)),
        )
        worker.pipeline(rt).full_probe_s = 0.0  # every cycle looks at every endpoint (the clock jumps)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        await worker.drain(rt)
        if rt.ports.http is not None:
            await rt.ports.http.aclose()  # type: ignore[attr-defined]


CreateHook = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
async def create_hook(hook_http: httpx.AsyncClient, runtime: Runtime) -> AsyncIterator[CreateHook]:
    """`await create_hook(ws, url, events=[...])`: an endpoint created over REST, `{webhook, secret}`;
    deleted (with its deliveries) when the test ends, so no later test's worker POSTs to it."""
    created: list[str] = []

    async def create(ws: WorkspaceHandle, url: str, events: list[str] | None = None, **body: Any) -> Any:
        payload = {"url": url, "events": events or ["lead.won"], **body}
        response = await hook_http.post("/api/v1/webhooks", headers=ws.headers, json=payload)
        assert response.status_code == 200, response.text
        created.append(response.json()["webhook"]["id"])
        return response.json()

    yield create
    if created:
        async with runtime.engine.begin() as conn:
            await conn.execute(delete(webhooks).where(webhooks.c.id.in_(created)))


async def run_worker(rt: Runtime, rounds: int = 10) -> None:
    """Run the webhook worker's ticks until it has nothing left to do at the runtime's clock, waiting for
    each round of POSTs (as the worker loop would, without sleeping)."""
    for _ in range(rounds):
        handled = await worker.tick(rt)
        await worker.drain(rt)
        if handled == 0:
            return
    raise AssertionError("the webhook worker still had work after 10 rounds")
