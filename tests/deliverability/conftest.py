"""The domain checker's server: the whole app on its own port, sharing the session database, configured
with blocklist zones served by the test DNS server and a local RDAP server (a real HTTP server on loopback
answering registration dates the tests set)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from outreach_app.asgi import build_app
from outreach_core.kernel.runtime import Runtime
from tests.conftest import served_ports, serving
from tests.deliverability.zones import DBL, DNSBL
from tests.dns_server import DnsServer


@dataclass
class Rdap:
    """Registration dates by domain; other domains are 404, as RDAP servers answer."""

    url: str = ""
    registered: dict[str, datetime] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def register(self, domain: str, days_ago: int) -> None:
        self.registered[domain] = datetime.now(UTC) - timedelta(days=days_ago)


@pytest.fixture(scope="module")
async def rdap() -> AsyncIterator[Rdap]:
    state = Rdap()

    async def domain(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        state.asked.append(name)
        when = state.registered.get(name)
        if when is None:
            return JSONResponse({"errorCode": 404, "title": "Not Found"}, status_code=404)
        events = [
            {"eventAction": "registration", "eventDate": when.isoformat().replace("+00:00", "Z")},
            {"eventAction": "expiration", "eventDate": (when + timedelta(days=3650)).isoformat()},
        ]
        return JSONResponse({"objectClassName": "domain", "ldhName": name, "events": events})

    app = Starlette(routes=[Route("/domain/{name}", domain)])
    async with serving(app) as url:
        state.url = url
        yield state


@pytest.fixture(scope="module")
async def checker(runtime: Runtime, dns_server: DnsServer, rdap: Rdap) -> AsyncIterator[str]:
    """The app with deliverability configured (zones, RDAP, private addresses allowed for the loopback
    RDAP server, a short DNS timeout); yields its base URL."""
    settings = runtime.settings.model_copy(
        update={
            "dnsbl_zones": DNSBL,
            "dbl_zones": DBL,
            "rdap_url": f"{rdap.url}/domain/{{domain}}",
            "allow_private_urls": True,
            "domain_check_dns_timeout_s": 1.5,
        }
    )
    ports = served_ports(settings, dns_server)
    app = build_app(Runtime(settings, engine=runtime.engine, ports=ports), flush_usage=False)
    async with serving(app) as url:
        yield url
    await ports.http.aclose()  # type: ignore[union-attr]


@pytest.fixture
async def api(checker: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"{checker}/api/v1", timeout=30) as client:
        yield client


def checks_by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["checks"]}
