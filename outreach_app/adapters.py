"""Adapters for the core's ports (the real I/O)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from urllib.parse import urlsplit

import dns.asyncresolver
import dns.exception
import dns.resolver
import httpx
import structlog

from outreach_core.settings import Settings
from outreach_core.urls import is_blocked_address, url_problem

_log = structlog.get_logger()


class DnspythonResolver:
    """`ports.DnsResolver` over dnspython; honours `OUTREACH_DNS_NAMESERVERS` (`host:port[,host:port]`)."""

    def __init__(self, nameservers: str | None = None, *, timeout_s: float = 3.0) -> None:
        if nameservers:
            resolver = dns.asyncresolver.Resolver(configure=False)
            hosts, ports = [], set()
            for entry in nameservers.split(","):
                host, _, port = (
                    entry.strip().rpartition(":") if entry.count(":") == 1 else (entry.strip(), "", "")
                )
                hosts.append(host or entry.strip())
                ports.add(int(port) if port else 53)
            resolver.nameservers = hosts
            resolver.port = ports.pop() if len(ports) == 1 else 53
        else:
            resolver = dns.asyncresolver.Resolver()
        resolver.timeout = timeout_s
        resolver.lifetime = timeout_s * 2
        self._resolver = resolver

    async def lookup(self, name: str, rdtype: str) -> list[str]:
        """Answers as text (MX: `"10 mx.example.com."`); empty for NXDOMAIN or no answer.

        Timeouts and server failures raise `dns.exception.DNSException`, so callers can tell "no mail server"
        from "could not ask"."""
        try:
            answer = await self._resolver.resolve(name, rdtype, raise_on_no_answer=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoNameservers) as exc:
            if isinstance(exc, dns.resolver.NXDOMAIN):
                return []
            raise
        return [r.to_text() for r in answer] if answer.rrset is not None else []


class HttpxClient:
    """`ports.HttpClient` over httpx, for the verifier API (and any other outgoing JSON POST).

    - TLS trusts the system store plus `OUTREACH_TLS_CA_FILE` when set.
    - Unless `allow_private_urls` (`OUTREACH_ALLOW_PRIVATE_URLS=1`), URLs whose host is, or resolves to, a
      loopback or private address are refused without sending anything (see `outreach_core.urls`).
      Redirects are never followed, so a public URL cannot bounce the request to a private one.
    - `timeout_s` bounds the whole exchange (connect, send, wait, read), not each phase.
    - The answer is read up to `max_response_bytes`; a longer body is cut there.

    Per the port's contract, every "no answer" outcome (refused URL, name not resolved, connection error,
    timeout) is status 0; the body then says what happened in a few words (e.g. `b"timed out"`), so the
    caller can record it.
    """

    def __init__(
        self,
        *,
        tls_ca_file: str | None = None,
        allow_private_urls: bool = False,
        max_response_bytes: int = 1 << 20,
    ) -> None:
        tls = ssl.create_default_context()
        if tls_ca_file:
            tls.load_verify_locations(cafile=tls_ca_file)
        self._allow_private = allow_private_urls
        self._max_bytes = max_response_bytes
        self._client = httpx.AsyncClient(
            verify=tls,
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": "outreach"},
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpxClient:
        return cls(tls_ca_file=settings.tls_ca_file, allow_private_urls=settings.allow_private_urls)

    async def post_json(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float
    ) -> tuple[int, bytes]:
        """POST `body` to `url`; `(status, body)`, or `(0, what happened)` when there was no answer."""
        problem = url_problem(url, allow_private=self._allow_private)
        if problem is not None:
            _log.warning("http_refused", url=_redact(url), problem=problem)
            return 0, f"refused: {problem}".encode()
        try:
            async with asyncio.timeout(timeout_s):
                if not self._allow_private:
                    problem = await _resolved_problem(url)
                    if problem is not None:
                        _log.warning("http_refused", url=_redact(url), problem=problem)
                        return 0, f"refused: {problem}".encode()
                return await self._post(url, body, headers)
        except TimeoutError:
            return 0, b"timed out"
        except httpx.HTTPError as exc:
            return 0, _describe(exc).encode()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        # httpx's own timeout is off: `asyncio.timeout` in `post_json` bounds the whole exchange.
        request = self._client.build_request("POST", url, content=body, headers=headers, timeout=None)
        response = await self._client.send(request, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size >= self._max_bytes:
                    break
            return response.status_code, b"".join(chunks)[: self._max_bytes]
        finally:
            await response.aclose()


async def _resolved_problem(url: str) -> str | None:
    """Why `url` must not be used once its host name is resolved (any private address refuses it)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return "host name not resolved"
    if any(is_blocked_address(str(info[4][0])) for info in infos):
        return "the host resolves to a private or loopback address"
    return None


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection failed"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "protocol error"
    return type(exc).__name__


def _redact(url: str) -> str:
    """The URL without query string or credentials, for logs."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{parts.path}"
