"""The host gate (DESIGN section 9; docs/link-domain.md): a request whose `Host` is a workspace's link domain
(its DNS seen pointing here: `pending_tls` or `active`) is served only for tracking (`/l/`, `/o/`) and the
unsubscribe path (`/u/`); anything else there (the API, MCP, OAuth, pages) is 404 `not_found`, so a link
domain can never be used to reach the API under someone's own domain.

The list of link domains is read from the database at most every `OUTREACH_LINK_HOST_CACHE_S` seconds
(default 5) by one request at a time, never per request; requests for the public URL's host, IP addresses
and `localhost` skip it entirely.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from http_api.protection import send_error
from outreach_core.kernel.errors import NotFound
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.urls import is_local_name, parse_ip
from outreach_core.link_domain.store import served_hosts
from outreach_core.mail.links import UNSUBSCRIBE_PATH

LINK_PATHS = ("/l/", "/o/", UNSUBSCRIBE_PATH)
"""What a link domain serves: click redirects, open pixels, unsubscribe."""


def request_host(scope: Scope) -> str:
    """The `Host` header's host, lower-case, without port or final dot ("" without one)."""
    for name, value in scope.get("headers", ()):
        if name == b"host":
            text: str = value.decode("latin-1").strip().lower()
            if text.startswith("["):
                return text.split("]", 1)[0] + "]"
            return text.rsplit(":", 1)[0].rstrip(".") if ":" in text else text.rstrip(".")
    return ""


class LinkHostGate:
    """ASGI middleware: on a link domain's host, only `LINK_PATHS` reach the app."""

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime
        self.public_host = (urlsplit(runtime.settings.public_url).hostname or "").lower()
        self.max_age = runtime.settings.link_host_cache_s
        self._hosts: frozenset[str] = frozenset()
        self._loaded_at = -float("inf")
        self._lock = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            path: str = scope.get("path", "")
            if not path.startswith(LINK_PATHS) and await self._is_link_host(request_host(scope)):
                if scope["type"] == "http":
                    await send_error(send, _not_here())
                else:
                    await send({"type": "websocket.close", "code": 1008})
                return
        await self.app(scope, receive, send)

    async def _is_link_host(self, host: str) -> bool:
        if not host or host == self.public_host or parse_ip(host) is not None or is_local_name(host):
            return False
        return host in await self._current()

    async def _current(self) -> frozenset[str]:
        if time.monotonic() - self._loaded_at < self.max_age:
            return self._hosts
        async with self._lock:
            if time.monotonic() - self._loaded_at >= self.max_age:  # not refreshed while waiting
                self._hosts = await self.runtime.system_read(served_hosts)
                self._loaded_at = time.monotonic()
        return self._hosts


def _not_here() -> NotFound:
    error = NotFound("page")
    error.message = "Not found: this host name is a link domain; it serves only the links in emails."
    return error
