"""Fixtures of the billing, onboarding, offer and writing tests: the local servers of `servers.py`, and the
whole app served (uvicorn) on the session database with a clock the test sets, the AI port and workspaces'
own AI keys pointed at the local Chat Completions server, website fetches allowed to reach loopback
(OUTREACH_ALLOW_PRIVATE_URLS=1), and billing `local` or `stripe` (against the local Stripe server)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from outreach_app.adapters.ai import ChatCompletionsClient, OwnKeyClients
from outreach_app.adapters.stripe_billing import StripeBilling
from outreach_app.adapters.web import WebPageFetcher
from outreach_app.asgi import build_app
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from tests.billing.servers import API_KEY, WEBHOOK_SECRET, FakeAi, FakeStripe, Website, running
from tests.conftest import MakeWorkspace, WorkspaceHandle, serving
from tests.dns_server import DnsServer

AI_TIMEOUT_S = 1.0


class TestClock(FixedClock):
    """The real time, until a test sets or moves it (`set`, `advance`); `follow` returns to the real time."""

    def __init__(self) -> None:
        super().__init__(datetime.now(UTC))
        self._fixed = False

    def now(self) -> datetime:
        return super().now() if self._fixed else datetime.now(UTC)

    def set(self, when: datetime) -> None:
        super().set(when)
        self._fixed = True

    def advance(self, **delta: float) -> datetime:
        self.set(self.now() + timedelta(**delta))
        return self.now()

    def follow(self) -> None:
        self._fixed = False


@pytest.fixture(scope="session")
async def ai_server() -> AsyncIterator[FakeAi]:
    found = FakeAi()
    async with running(found.app()) as (url, _):
        found.url = url
        yield found


@pytest.fixture(scope="session")
async def website() -> AsyncIterator[Website]:
    found = Website()
    async with running(found.app()) as (url, port):
        found.url, found.port = url, port
        yield found


@pytest.fixture(scope="session")
async def stripe_server() -> AsyncIterator[FakeStripe]:
    found = FakeStripe()
    async with running(found.app()) as (url, _):
        found.url = url
        yield found


@dataclass
class Served:
    """The app as users run it, with its runtime, clock and base URL; `client()` is an httpx client."""

    runtime: Runtime
    clock: TestClock
    url: str

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=30)

    @asynccontextmanager
    async def mcp(self, token: str) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as hc,
            Client(streamable_http_client(f"{self.url}/mcp", http_client=hc)) as client,
        ):
            yield client


def _settings(base: Settings, ai: FakeAi, **more: Any) -> Settings:
    return base.model_copy(
        update={
            "allow_private_urls": True,
            "ai_base_url": f"{ai.url}/v1",
            "ai_model": "server-model",
            "ai_api_key": "sk-server",
            "ai_timeout_s": AI_TIMEOUT_S,
            "ai_openai_base_url": f"{ai.url}/openai",
            "ai_google_base_url": f"{ai.url}/google",
            "web_timeout_s": 2.0,
            **more,
        }
    )


@asynccontextmanager
async def served_app(
    settings: Settings, engine_runtime: Runtime, *, server_ai: bool = True, stripe: bool = False
) -> AsyncIterator[Served]:
    clock = TestClock()
    ports = Ports(
        clock=clock,
        ai=ChatCompletionsClient.from_settings(settings) if server_ai else None,
        ai_keys=OwnKeyClients(settings),
        web=WebPageFetcher.from_settings(settings),
        billing=StripeBilling.from_settings(settings) if stripe else None,
    )
    rt = Runtime(settings, engine=engine_runtime.engine, ports=ports)
    async with serving(build_app(rt, flush_usage=False)) as url:
        # links the service makes (local checkout pages) point at where it is served
        rt.settings = settings.model_copy(update={"public_url": url})
        yield Served(rt, clock, url)
    for port in (ports.ai, ports.ai_keys, ports.web, ports.billing):
        close = getattr(port, "aclose", None)
        if close is not None:
            await close()


@pytest.fixture(scope="session")
async def billing_app(settings: Settings, runtime: Runtime, ai_server: FakeAi) -> AsyncIterator[Served]:
    """Local billing, the server's AI endpoint configured."""
    async with served_app(_settings(settings, ai_server), runtime) as served:
        yield served


@pytest.fixture(scope="session")
async def no_ai_app(settings: Settings, runtime: Runtime, ai_server: FakeAi) -> AsyncIterator[Served]:
    """Local billing, no AI endpoint on the server (workspaces' own keys still work)."""
    configured = _settings(settings, ai_server, ai_base_url=None, ai_model=None)
    async with served_app(configured, runtime, server_ai=False) as served:
        yield served


@pytest.fixture(scope="session")
async def stripe_app(
    settings: Settings, runtime: Runtime, ai_server: FakeAi, stripe_server: FakeStripe
) -> AsyncIterator[Served]:
    configured = _settings(
        settings,
        ai_server,
        billing="stripe",
        stripe_api_key=API_KEY,
        stripe_webhook_secret=WEBHOOK_SECRET,
        stripe_api_base=stripe_server.url,
    )
    async with served_app(configured, runtime, stripe=True) as served:
        yield served


@pytest.fixture(autouse=True)
def _fresh(ai_server: FakeAi, billing_app: Served) -> None:
    """Every test starts with an empty AI script and the clock following the real time."""
    ai_server.reset()
    ai_server.refuse_keys.clear()
    billing_app.clock.follow()


@pytest.fixture
async def api(billing_app: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with billing_app.client() as client:
        yield client


MakeHandle = Callable[..., Any]


@pytest.fixture
def owner(make_workspace: MakeWorkspace) -> Callable[..., Any]:
    async def make(plan: str | None = "growth") -> WorkspaceHandle:
        return await make_workspace(plan=plan)

    return make


@pytest.fixture(scope="session")
def site_dns(dns_server: DnsServer) -> DnsServer:
    dns_server.add("site.example.com", "A", "127.0.0.1")
    dns_server.add("inside.site.example.com", "A", "127.0.0.2")
    return dns_server
