"""Outgoing connections to hosts that users name: mail servers (login tests and sending), the verifier API,
and any other outgoing HTTP (webhooks, website fetches).

`AddressGuard` first checks the host itself with `outreach_core.kernel.urls.host_problem` (the one check of a
host, also applied when a URL or a mail server is saved: its form as a client reads it, then, unless
`OUTREACH_ALLOW_PRIVATE_URLS=1`, a public address or a registrable, non-local name). It then resolves a
name **once**, refuses it unless every address is globally routable, and the caller connects to an address
it returned, never to the name: a DNS answer cannot change between the check and the connection (DNS
rebinding). TLS still verifies the certificate against the host name (SNI and the name check use the name,
the TCP connection the checked address).

- Mail: `open_socket` connects to a checked address; aiosmtplib takes the socket (`sock=`) with
  `hostname` = the name, and `SocketIMAP4` does the same for aioimaplib.
- HTTP: `outreach_app.adapters.http.GuardedHttpClient` (aiohttp) resolves through the same guard and
  connects to an address it returned; kept connections stay keyed by the URL's host name, so a connection
  opened (and its certificate checked) for one name is never reused for another. aiohttp skips the resolver
  for an IP address in a URL, so its sockets are also made by `AddressGuard.check_connect`, which refuses
  every address the guard would refuse, whatever path led to it. Webhook delivery and the verifier API use
  it.

Names are resolved through `OUTREACH_DNS_NAMESERVERS` when it is set (the DNS port, as for every other
lookup), else through the system resolver (`getaddrinfo`, which also reads /etc/hosts). `localhost` and
`*.localhost` are the machine itself (RFC 6761) and are never looked up.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import aioimaplib
import dns.exception

from outreach_core.kernel.ports import DnsResolver
from outreach_core.kernel.urls import (
    ALLOW_PRIVATE_HINT,
    address_kind,
    host_problem,
    is_local_name,
    normal_host,
    parse_ip,
)


class NotContacted(Exception):
    """The host was not contacted: refused (not a public address) or not found. `reason` is a sentence for
    the person who configured the host."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class AddressGuard:
    """Resolves a host once and checks every address it has (see the module docstring)."""

    allow_private: bool = False
    dns: DnsResolver | None = None  # None: the system resolver

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to, in order; raises `NotContacted` when the host is refused
        (`outreach_core.kernel.urls.host_problem`: its form, and unless private addresses are allowed a
        non-public address or name) or has no address, or when one of its addresses is not globally
        routable (unless private addresses are allowed)."""
        problem = host_problem(host, allow_private=self.allow_private)
        if problem is not None:
            raise NotContacted(f"refused: {problem}")
        name = normal_host(host)
        literal = parse_ip(name)
        if literal is not None:
            return [name]
        if is_local_name(name):
            found = ["127.0.0.1", "::1"]
        else:
            found = await self._resolve(name, port)
        if not found:
            raise NotContacted(f"host not found: {host}")
        for address in found:
            kind = self.refused_kind(address)
            if kind is not None:
                raise NotContacted(
                    f"refused: {host} resolves to {address}, a {kind} address, not a public one; "
                    f"{ALLOW_PRIVATE_HINT}"
                )
        return found

    def refused_kind(self, address: str) -> str | None:
        """What `address` is ("loopback", "private" ...) when a connection to it is refused; None when it is
        allowed (a globally routable address, or any address when private addresses are allowed)."""
        if self.allow_private:
            return None
        ip = parse_ip(address)
        return address_kind(ip) if ip is not None else "unknown"

    def check_connect(self, address: str) -> None:
        """Raises `NotContacted` unless a socket may connect to `address` (the last check before a connect,
        for clients that can skip the resolver, e.g. for an IP address in a URL)."""
        kind = self.refused_kind(address)
        if kind is not None:
            raise NotContacted(
                f"refused: {address} is a {kind} address, not a public one; {ALLOW_PRIVATE_HINT}"
            )

    async def _resolve(self, host: str, port: int) -> list[str]:
        if self.dns is not None:
            try:
                v4, v6 = await asyncio.gather(self.dns.lookup(host, "A"), self.dns.lookup(host, "AAAA"))
            except dns.exception.DNSException:
                raise NotContacted(f"could not resolve {host} (DNS did not answer)") from None
            return _unique(v4 + v6)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            raise NotContacted(f"host not found: {host}") from None
        return _unique(str(info[4][0]) for info in infos)

    async def open_socket(self, host: str, port: int) -> socket.socket:
        """A TCP socket connected to a checked address of `host` (non-blocking, for asyncio)."""
        return await open_socket(await self.addresses(host, port), port)


def _unique(addresses: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(addresses))


async def open_socket(addresses: list[str], port: int) -> socket.socket:
    """Connect to the first of `addresses` that accepts; the last error when none does."""
    loop = asyncio.get_running_loop()
    error: OSError | None = None
    for address in addresses:
        ip = parse_ip(address)
        family = socket.AF_INET6 if ip is not None and ip.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (address, port))
        except OSError as exc:
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    raise error or OSError(f"no address to connect to on port {port}")


class SocketIMAP4(aioimaplib.IMAP4):  # type: ignore[misc]
    """aioimaplib over a socket already connected (to a checked address). With `ssl_context`, implicit TLS
    is negotiated on it, verified against `host`."""

    def __init__(
        self, sock: socket.socket, host: str, *, timeout: float, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self._sock = sock
        super().__init__(host=host, port=0, timeout=timeout, ssl_context=ssl_context)

    def create_client(
        self,
        host: str,
        port: int,
        loop: asyncio.AbstractEventLoop | None,
        conn_lost_cb: Any = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        local_loop = loop or asyncio.get_running_loop()
        self.protocol = aioimaplib.IMAP4ClientProtocol(local_loop, conn_lost_cb)
        self._client_task = local_loop.create_task(
            local_loop.create_connection(
                lambda: self.protocol,
                sock=self._sock,
                ssl=ssl_context,
                server_hostname=host if ssl_context is not None else None,
            )
        )


def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """The system's trust store plus `OUTREACH_TLS_CA_FILE` when set; certificates and names verified."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context
