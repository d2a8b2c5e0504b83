"""The tracking links of emails: `GET`/`HEAD /l/{token}` (302 to the link's target) and `/o/{token}` (a 1x1
GIF), without authentication, outside `/api/v1` (docs/tracking.md).

A forged, altered or truncated token is 404, never a redirect. A hit is queued in the `HitRecorder`, which
commits hits in batches; the answer waits for that commit up to `OUTREACH_TRACKING_COMMIT_WAIT_MS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from outreach_core.runtime import Runtime
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
_NO_CACHE = {
    "Cache-Control": "no-store, no-cache, must-revalidate, max-age=0",
    "Pragma": "no-cache",
    "Expires": "0",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
_NOT_FOUND = (
    '<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Link not valid</title></head>\n'
    "<body><main><h1>Link not valid</h1><p>This link is not valid.</p></main></body>\n</html>\n"
)


def tracking_recorder(runtime: Runtime) -> HitRecorder:
    """The recorder of this process's tracking hits (close it when the server stops)."""

    async def flush(hits: Sequence[Hit]) -> int:
        return await runtime.system(record_hits, hits)

    settings = runtime.settings
    return HitRecorder(
        flush, wait_s=settings.tracking_commit_wait_ms / 1000, max_queued=settings.tracking_max_queued
    )


def tracking_routes(runtime: Runtime, recorder: HitRecorder) -> list[Route]:
    """`/l/{token}` and `/o/{token}` (GET and HEAD), to mount at the root of the app."""
    keys = runtime.settings.signing_keys()
    clock = runtime.ports.clock

    def hit(request: Request, kind: str, send_id: str, url: str | None) -> Hit:
        client = request.client
        return Hit(
            kind="click" if kind == "click" else "open",
            send_id=send_id,
            at=clock.now(),
            url=url,
            head=request.method == "HEAD",
            user_agent=request.headers.get("user-agent", ""),
            address=client.host if client else None,
        )

    async def click(request: Request) -> Response:
        try:
            link = read_click(keys, request.path_params["token"])
        except NotATrackingToken:
            return HTMLResponse(_NOT_FOUND, status_code=404, headers=_NO_CACHE)
        if link.send_id is not None:
            await recorder.record(hit(request, "click", link.send_id, link.url))
        return Response(status_code=302, headers={**_NO_CACHE, "Location": location(link.url)})

    async def pixel(request: Request) -> Response:
        try:
            send_id = read_open(keys, request.path_params["token"])
        except NotATrackingToken:
            return Response(status_code=404, headers=_NO_CACHE)
        if send_id is not None:
            await recorder.record(hit(request, "open", send_id, None))
        return Response(PIXEL, media_type="image/gif", headers=_NO_CACHE)

    return [
        Route(CLICK_PATH + "{token}", click, methods=["GET", "HEAD"]),
        Route(OPEN_PATH + "{token}", pixel, methods=["GET", "HEAD"]),
    ]
