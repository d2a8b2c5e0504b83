"""`ports.HttpClient` over aiohttp: the outgoing JSON POSTs of webhook delivery and the verifier API, and the
GETs of RDAP lookups (the domain checker).

The same rules as every outgoing connection (`outreach_app.outgoing`, docs/protection.md):

- the URL is checked first (`urls.url_problem`: http or https, a host of the right form, and no private
  or loopback address, local or non-public name unless `OUTREACH_ALLOW_PRIVATE_URLS=1`), and its host is
  checked again as aiohttp will use it (yarl's `raw_host`, after its IDNA/UTS-46 mapping: 127.0.0.1 in
  full-width digits is 127.0.0.1 there) with the same `urls.host_problem`;
- a host name is resolved **once per connection** by `GuardResolver`, which asks `AddressGuard` (through
  `OUTREACH_DNS_NAMESERVERS` when set) and refuses the name when any of its addresses is not globally
  routable; aiohttp then connects to an address the guard returned (no DNS cache, so no later answer can
  slip in) while TLS still uses the name for SNI and the certificate check; kept connections are keyed by
  the URL's host name, never reused for another name;
- aiohttp connects to an IP address in a URL without asking the resolver, so every socket it opens is
  made by `_socket_factory`, which refuses any address the guard refuses (`AddressGuard.check_connect`):
  the connected address is checked whichever way aiohttp found it;
- redirects are never followed, proxy variables and cookies are ignored, no compression is asked for;
- `timeout_s` bounds the whole exchange, and the answer is read up to a limit (the rest is never read).

Why aiohttp rather than httpx (which the other adapters use): a webhook worker sends hundreds of POSTs a
second, and aiohttp's C parser spends about a quarter of httpx's CPU per request on loopback (0.22 ms
against 0.9 ms, measured: docs/PERFORMANCE.md).

Every "no answer" outcome is status 0 with a few words saying why (`b"timed out"`,
`b"TLS certificate not trusted (...)"`), as the port promises; nothing here ever raises for the peer's
behaviour.
"""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

import aiohttp
import structlog
from aiohappyeyeballs import AddrInfoType
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from outreach_app.adapters.dns import DnspythonResolver
from outreach_app.outgoing import AddressGuard, NotContacted, tls_context
from outreach_core.kernel.ports import DnsResolver
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.urls import host_problem, parse_ip, url_problem

_log = structlog.get_logger()


class GuardResolver(AbstractResolver):
    """aiohttp's resolver, answering only with addresses `AddressGuard` checked (raises `NotContacted`)."""

    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found: list[ResolveResult] = []
        for address in await self._guard.addresses(host, port):
            ip = parse_ip(address)
            inet = socket.AF_INET6 if ip is not None and ip.version == 6 else socket.AF_INET
            found.append(
                {
                    "hostname": host,
                    "host": address,
                    "port": port,
                    "family": inet,
                    "proto": 0,
                    "flags": socket.AI_NUMERICHOST,
                }
            )
        return found

    async def close(self) -> None:
        return None


class GuardedHttpClient:
    """`ports.HttpClient`: see the module docstring."""

    def __init__(
        self,
        *,
        tls_ca_file: str | None = None,
        allow_private_urls: bool = False,
        max_response_bytes: int = 1 << 20,
        dns: DnsResolver | None = None,
        max_connections: int = 100,
    ) -> None:
        self._allow_private = allow_private_urls
        self._max_bytes = max_response_bytes
        self._guard = AddressGuard(allow_private_urls, dns)
        self._tls = tls_context(tls_ca_file)
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> GuardedHttpClient:
        dns = DnspythonResolver(settings.dns_nameservers) if settings.dns_nameservers else None
        return cls(tls_ca_file=settings.tls_ca_file, allow_private_urls=settings.allow_private_urls, dns=dns)

    async def post_json(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout_s: float,
        *,
        max_bytes: int | None = None,
    ) -> tuple[int, bytes]:
        """POST `body` to `url`; `(status, body)` read up to `max_bytes` (default `max_response_bytes`), or
        `(0, what happened)` when there was no answer."""
        problem = self._problem(url)
        if problem is not None:
            _log.warning("http_refused", url=_redact(url), problem=problem)
            return 0, f"refused: {problem}".encode()
        try:
            async with asyncio.timeout(timeout_s):
                return await self._post(url, body, headers, max_bytes or self._max_bytes)
        except NotContacted as exc:
            _log.warning("http_refused", url=_redact(url), problem=exc.reason)
            return 0, exc.reason.encode()
        except TimeoutError:
            return 0, b"timed out"
        except aiohttp.ClientError as exc:
            return 0, describe(exc).encode()
        except (ValueError, UnicodeError):
            return 0, b"not a valid URL"

    async def get(
        self, url: str, headers: dict[str, str], timeout_s: float, *, max_bytes: int | None = None
    ) -> tuple[int, bytes]:
        """GET `url` (the RDAP lookups of the domain checker) under the same rules as `post_json`."""
        problem = self._problem(url)
        if problem is not None:
            _log.warning("http_refused", url=_redact(url), problem=problem)
            return 0, f"refused: {problem}".encode()
        try:
            async with asyncio.timeout(timeout_s):
                return await self._send("GET", url, None, headers, max_bytes or self._max_bytes)
        except NotContacted as exc:
            _log.warning("http_refused", url=_redact(url), problem=exc.reason)
            return 0, exc.reason.encode()
        except TimeoutError:
            return 0, b"timed out"
        except aiohttp.ClientError as exc:
            return 0, describe(exc).encode()
        except (ValueError, UnicodeError):
            return 0, b"not a valid URL"

    def _problem(self, url: str) -> str | None:
        """Why `url` is refused: as the service reads it, then its host as aiohttp will connect to it."""
        problem = url_problem(url, allow_private=self._allow_private)
        if problem is not None:
            return problem
        try:
            host = URL(url).raw_host
        except (ValueError, UnicodeError):
            return "not a valid URL"
        if not host:
            return "the URL has no host"
        return host_problem(host, allow_private=self._allow_private)

    def _socket_factory(self, addr_info: AddrInfoType) -> socket.socket:
        """Every socket aiohttp connects: only to an address the guard allows (else `NotContacted`)."""
        family, kind, proto, _, address = addr_info
        self._guard.check_connect(str(address[0]))
        return socket.socket(family, kind, proto)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                resolver=GuardResolver(self._guard),
                use_dns_cache=False,
                ssl=self._tls,
                limit=self._max_connections,
                limit_per_host=0,
                socket_factory=self._socket_factory,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                trust_env=False,
                skip_auto_headers=("Accept-Encoding",),
                headers={"User-Agent": "outreach"},
                timeout=aiohttp.ClientTimeout(total=None),  # `asyncio.timeout` bounds the whole exchange
            )
        return self._session

    async def _post(
        self, url: str, body: bytes, headers: dict[str, str], max_bytes: int
    ) -> tuple[int, bytes]:
        return await self._send("POST", url, body, headers, max_bytes)

    async def _send(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str], max_bytes: int
    ) -> tuple[int, bytes]:
        request = self._client().request(method, url, data=body, headers=headers, allow_redirects=False)
        async with request as response:
            chunks: list[bytes] = []
            size = 0
            while size < max_bytes:
                chunk = await response.content.read(max_bytes - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            return response.status, b"".join(chunks)


def describe(exc: aiohttp.ClientError) -> str:
    """A few words for a request that got no answer."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        error = exc.certificate_error
        reason = getattr(error, "verify_message", None) or getattr(error, "reason", None)
        return f"TLS certificate not trusted ({reason})" if reason else "TLS certificate not trusted"
    if isinstance(exc, aiohttp.ClientConnectorSSLError | aiohttp.ClientSSLError):
        return "TLS handshake failed"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connection failed"
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError | aiohttp.ClientOSError):
        return "connection closed before an answer"
    if isinstance(exc, aiohttp.ClientResponseError):
        return "protocol error"
    if isinstance(exc, aiohttp.InvalidURL):
        return "not a valid URL"
    return type(exc).__name__


def _redact(url: str) -> str:
    """The URL without query string or credentials, for logs."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{parts.path}"


__all__ = ["GuardResolver", "GuardedHttpClient", "describe"]
