"""Link-domain fixtures: a loopback TLS server presenting, per SNI name, a trustme certificate that is valid,
for another name, or expired; and the service with a link target, real DNS (the session's dnslib server)
and the real TLS probe, served by uvicorn."""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import pytest

from outreach_app.adapters import DnspythonResolver
from outreach_app.adapters.tls_probe import TlsHandshakeProbe
from outreach_app.asgi import build_app
from outreach_core.kernel.ports import Clock, FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from tests.conftest import free_port, serving
from tests.dns_server import DnsServer
from tests.mail_servers import MailCA

TARGET = "edge.outreach-links.test"
"""OUTREACH_LINK_TARGET of these tests: where every link domain's CNAME must point."""

CertKind = Literal["valid", "wrong_name", "expired"]


class TlsServer:
    """A TLS server on 127.0.0.1 that picks the certificate by SNI (`present`); a name it has none for gets
    the handshake refused, as a proxy without a certificate yet does."""

    def __init__(self, ca: MailCA) -> None:
        self.ca = ca
        self.port = free_port()
        self.contexts: dict[str, ssl.SSLContext] = {}
        self._server: asyncio.Server | None = None

    def present(self, hostname: str, kind: CertKind = "valid") -> None:
        now = dt.datetime.now(dt.UTC)
        if kind == "valid":
            cert = self.ca.ca.issue_cert(hostname)
        elif kind == "wrong_name":
            cert = self.ca.ca.issue_cert(f"other-{hostname}")
        else:
            cert = self.ca.ca.issue_cert(
                hostname, not_before=now - dt.timedelta(days=30), not_after=now - dt.timedelta(days=1)
            )
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        self.contexts[hostname] = context

    def forget(self, hostname: str) -> None:
        self.contexts.pop(hostname, None)

    def _sni(self, sock: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> int | None:
        context = self.contexts.get(name or "")
        if context is None:
            return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME
        sock.context = context
        return None

    async def start(self) -> None:
        default = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.cert.configure_cert(default)  # localhost, never asked for
        default.sni_callback = self._sni  # type: ignore[assignment]

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.close()

        self._server = await asyncio.start_server(handle, "127.0.0.1", self.port, ssl=default)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@pytest.fixture(scope="session")
async def tls_server(mail_ca: MailCA) -> AsyncIterator[TlsServer]:
    server = TlsServer(mail_ca)
    await server.start()
    yield server
    await server.stop()


@dataclass
class LinkEnv:
    runtime: Runtime
    dns: DnsServer
    tls: TlsServer
    clock: Clock

    def publish(self, hostname: str, *, cname: str | None = TARGET, address: str = "127.0.0.1") -> None:
        """DNS for `hostname`: its CNAME (None: none) and the address it reaches. The test DNS server does
        not follow CNAMEs, so the address is published at the host name too, as a resolver's answer shows
        it."""
        self.dns.remove(hostname, "CNAME")
        self.dns.remove(hostname, "A")
        if cname is not None:
            self.dns.add(hostname, "CNAME", f"{cname}.")
        self.dns.add(hostname, "A", address)


def make_runtime(
    runtime: Runtime,
    dns_server: DnsServer,
    tls_server: TlsServer,
    clock: Clock | None = None,
    **settings: Any,
) -> Runtime:
    """The session database with a link target, DNS at the test server and the real TLS probe trusting
    the test CA, its link TLS port the test TLS server's."""
    updated = runtime.settings.model_copy(
        update={
            "link_target": TARGET,
            "link_tls_port": tls_server.port,
            "link_check_timeout_s": 3.0,
            "link_host_cache_s": 0.0,
            "allow_private_urls": True,
            "dns_nameservers": dns_server.nameservers,
            **settings,
        }
    )
    resolver = DnspythonResolver(dns_server.nameservers, timeout_s=1.0)
    ports = Ports(
        dns=resolver,
        tls=TlsHandshakeProbe(tls_ca_file=updated.tls_ca_file, allow_private=True, dns=resolver),
    )
    if clock is not None:
        ports.clock = clock
    return Runtime(updated, engine=runtime.engine, ports=ports)


def _publish_target(dns_server: DnsServer) -> None:
    dns_server.remove(TARGET, "A")
    dns_server.add(TARGET, "A", "127.0.0.1")


@pytest.fixture(scope="session")
def link_env(runtime: Runtime, dns_server: DnsServer, tls_server: TlsServer) -> LinkEnv:
    _publish_target(dns_server)
    return LinkEnv(make_runtime(runtime, dns_server, tls_server), dns_server, tls_server, runtime.ports.clock)


@pytest.fixture(scope="session")
async def link_server(link_env: LinkEnv) -> AsyncIterator[str]:
    """The whole app on its own port, on the link-domain runtime."""
    async with serving(build_app(link_env.runtime, flush_usage=False)) as url:
        yield url


@pytest.fixture
async def link_http(link_server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=link_server, timeout=30) as client:
        yield client


MakeClockRuntime = Callable[[FixedClock], Runtime]


@pytest.fixture
def clock_runtime(runtime: Runtime, dns_server: DnsServer, tls_server: TlsServer) -> MakeClockRuntime:
    _publish_target(dns_server)
    return lambda clock: make_runtime(runtime, dns_server, tls_server, clock)
