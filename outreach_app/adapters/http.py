"""`ports.HttpClient` over httpx: outgoing HTTP (the verifier API), to checked addresses only."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx
import structlog

from outreach_app.adapters.dns import configured_dns
from outreach_app.outgoing import AddressGuard, NotContacted, guarded_http_client, tls_context
from outreach_core.ports import DnsResolver
from outreach_core.settings import Settings
from outreach_core.urls import url_problem

_log = structlog.get_logger()


class HttpxClient:
    """`ports.HttpClient` over httpx, for the verifier API (and any other outgoing JSON POST).

    - TLS trusts the system store plus `OUTREACH_TLS_CA_FILE` when set.
    - Connections go through `outreach_app.outgoing`: the host is resolved once (through
      `OUTREACH_DNS_NAMESERVERS` when set) and, unless `allow_private_urls` (`OUTREACH_ALLOW_PRIVATE_URLS=1`),
      refused without sending anything when an address is not globally routable; the connection is made to
      the address checked. Redirects are never followed, so a public URL cannot bounce the request to a
      private one.
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
        dns: DnsResolver | None = None,
    ) -> None:
        self._allow_private = allow_private_urls
        self._max_bytes = max_response_bytes
        guard = AddressGuard(allow_private_urls, dns)
        tls = tls_context(tls_ca_file)
        self._client = guarded_http_client(guard, tls, headers={"User-Agent": "outreach"})

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpxClient:
        return cls(
            tls_ca_file=settings.tls_ca_file,
            allow_private_urls=settings.allow_private_urls,
            dns=configured_dns(settings),
        )

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
                return await self._post(url, body, headers)
        except NotContacted as exc:
            _log.warning("http_refused", url=_redact(url), problem=exc.reason)
            return 0, exc.reason.encode()
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
