"""The unsubscribe endpoint behind every `{{unsubscribe}}` link and `List-Unsubscribe` header.

- `POST /u/{token}`: RFC 8058 one-click (mail providers post `List-Unsubscribe=One-Click`); also what the
  page's button sends. Unsubscribes at once and answers 200 with a short page: no cookies, no redirect.
- `GET /u/{token}`: a page naming the address with a confirm button; a GET never unsubscribes (link
  scanners and previews follow links).
A forged, altered or unknown token gets a 404 page that says nothing about any lead.
"""

from __future__ import annotations

import html

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from outreach_core.campaigns.unsubscribe import describe_unsubscribe, read_unsubscribe_link, unsubscribe_lead
from outreach_core.kernel.errors import NotFound
from outreach_core.kernel.runtime import Runtime
from outreach_core.mail.links import UNSUBSCRIBE_PATH

_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def unsubscribe_routes(runtime: Runtime) -> list[Route]:
    """`GET` and `POST /u/{token}`, to mount at the root of the app."""

    async def unsubscribe(request: Request) -> Response:
        token = request.path_params["token"]
        try:
            link = read_unsubscribe_link(runtime.settings, token, runtime.ports.clock.now())
            if request.method == "POST":
                done = await runtime.execute(link.principal, unsubscribe_lead, link.lead_id, link.campaign_id)
                return _page("Unsubscribed", f"<p>{html.escape(done.email)} will get no more emails from "
                             f"{html.escape(done.workspace_name)}.</p>")  # fmt: skip
            state = await runtime.read(link.principal, describe_unsubscribe, link.lead_id)
        except NotFound:
            return _page("Link not valid", "<p>This unsubscribe link is not valid.</p>", 404)
        if state.already:
            return _page("Unsubscribed", f"<p>{html.escape(state.email)} is already unsubscribed.</p>")
        return _page(
            "Unsubscribe",
            f"<p>Stop emails from {html.escape(state.workspace_name)} to {html.escape(state.email)}?</p>"
            '<form method="post"><button type="submit">Unsubscribe</button></form>',
        )

    return [Route(UNSUBSCRIBE_PATH + "{token}", unsubscribe, methods=["GET", "POST"])]


def _page(title: str, body: str, status: int = 200) -> Response:
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n</head>\n<body>\n<main><h1>{html.escape(title)}</h1>\n{body}"
        "</main>\n</body>\n</html>\n"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)
