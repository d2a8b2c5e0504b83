"""The tracking links of emails: `GET`/`HEAD /l/{token}` (302 to the link's target) and `/o/{token}` (a 1x1
GIF), without authentication, outside `/api/v1` (docs/tracking.md).

A forged, altered or truncated token is 404, never a redirect. A hit is queued in the `HitRecorder`, which
commits hits in batches; the answer comes once the hit is in the journal, or without one once it is
committed (at most `OUTREACH_TRACKING_COMMIT_WAIT_MS`; on PostgreSQL without waiting for the WAL flush).
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
from starlette.types import ASGIApp, Receive, Scope, Send

from outreach_core.kernel.ids import new_id
from outreach_core.kernel.runtime import Runtime
from outreach_core.tracking.journal import Journal
from outreach_core.tracking.record import record_hits
from outreach_core.tracking.recorder import HitRecorder
from outreach_core.tracking.rules import Hit
from outreach_core.tracking.tokens import (
    CLICK_PATH,
    OPEN_PATH,
    NotATrackingToken,
    location,
    read_click,
    read_open,
)

PIXEL = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00"
    b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)
"""A transparent 1x1 GIF (43 bytes)."""
_log = structlog.get_logger("outreach.tracking")
_NO_CACHE = [
    (b"cache-control", b"no-store, no-cache, must-revalidate, max-age=0"),
    (b"pragma", b"no-cache"),
    (b"referrer-policy", b"no-referrer"),
]
_TEXT, _HTML, _GIF = b"text/plain; charset=utf-8", b"text/html; charset=utf-8", b"image/gif"
_NOT_FOUND = (
    b'<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Link not valid</title></head>\n'
    b"<body><main><h1>Link not valid</h1><p>This link is not valid.</p></main></body>\n</html>\n"
)


def tracking_recorder(runtime: Runtime) -> HitRecorder:
    """The recorder of this process's tracking hits, with its journal where the settings give one; call
    `replay` at start and `close` when the server stops."""

    settings = runtime.settings
    directory = settings.tracking_journal_dir
    journal = None
    if directory is not None:
        try:
            journal = Journal(directory)
        except OSError:  # not writable: requests wait for their commit instead
            _log.exception("tracking_journal_unavailable", directory=str(directory))
    # A journaled batch's segment is deleted after its commit, so that commit must be on disk first;
    # without a journal a request waits only until PostgreSQL holds its hit (docs/tracking.md).
    flushed = journal is not None

    async def flush(hits: Sequence[Hit], replay: bool) -> int:
        return await runtime.system(record_hits, hits, replay=replay, flushed=flushed or replay)

    return HitRecorder(
        flush,
        wait_s=settings.tracking_commit_wait_ms / 1000,
        max_queued=settings.tracking_max_queued,
        gather_s=settings.tracking_batch_ms / 1000,
        journal=journal,
    )


class TrackingLinks:
    """Pure ASGI middleware, outermost but for Starlette's error handler: answers `/l/...` and `/o/...`
    itself (no routing, request object or response class: at 1,000 requests/s those cost more than the
    work) and passes every other request on. Tracking requests get no request id or request log line."""

    def __init__(self, app: ASGIApp, runtime: Runtime, recorder: HitRecorder) -> None:
        self.app = app
        self.recorder = recorder
        self.keys = runtime.settings.signing_keys()
        self.clock = runtime.ports.clock
        self.journaled = recorder.journal is not None  # a journaled hit carries its event id from the start

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path.startswith(CLICK_PATH):
            await self.click(scope, send, path[len(CLICK_PATH) :])
        elif path.startswith(OPEN_PATH):
            await self.open(scope, send, path[len(OPEN_PATH) :])
        else:
            await self.app(scope, receive, send)

    async def click(self, scope: Scope, send: Send, token: str) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _answer(send, scope, 405, _TEXT, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
            return
        try:
            link = read_click(self.keys, token)
        except NotATrackingToken:
            await _answer(send, scope, 404, _HTML, _NOT_FOUND)
            return
        if link.send_id is not None:
            await self.recorder.record(self.hit(scope, "click", link.send_id, link.url))
        await _answer(send, scope, 302, _TEXT, b"", [(b"location", location(link.url).encode("ascii"))])

    async def open(self, scope: Scope, send: Send, token: str) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _answer(send, scope, 405, _TEXT, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
            return
        try:
            send_id = read_open(self.keys, token)
        except NotATrackingToken:
            await _answer(send, scope, 404, _TEXT, b"Not Found")
            return
        if send_id is not None:
            await self.recorder.record(self.hit(scope, "open", send_id, None))
        await _answer(send, scope, 200, _GIF, PIXEL)

    def hit(self, scope: Scope, kind: str, send_id: str, url: str | None) -> Hit:
        agent = next((v for k, v in scope["headers"] if k == b"user-agent"), b"")
        client = scope.get("client")
        return Hit(
            kind="click" if kind == "click" else "open",
            send_id=send_id,
            at=self.clock.now(),
            url=url,
            head=scope["method"] == "HEAD",
            user_agent=agent.decode("latin-1"),
            address=client[0] if client else None,
            id=new_id("trk") if self.journaled else None,
        )


async def _answer(
    send: Send,
    scope: Scope,
    status: int,
    content_type: bytes,
    body: bytes,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        *_NO_CACHE,
        *(extra or ()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
