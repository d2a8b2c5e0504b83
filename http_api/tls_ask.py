"""`GET /tls/ask?domain=<host>` (DESIGN section 9; docs/link-domain.md): the reverse proxy's question before
it gets a certificate on demand (Caddy's `on_demand_tls { ask ... }`). 200 when `<host>` is a workspace's
link domain whose DNS was seen pointing here (`pending_tls` or `active`), 404 otherwise. No authentication
(the proxy has no credential); the answer says only yes or no."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.urls import NotAHost, normal_host
from outreach_core.link_domain.store import is_served_host

TLS_ASK_PATH = "/tls/ask"


def tls_ask_routes(runtime: Runtime) -> list[Route]:
    """`GET /tls/ask`, to mount at the root of the app."""

    async def tls_ask(request: Request) -> Response:
        domain = request.query_params.get("domain", "")
        try:
            name = normal_host(domain) if 0 < len(domain) <= 300 else ""
        except NotAHost:
            name = ""
        served = bool(name) and await runtime.system_read(is_served_host, name)
        if served:
            return PlainTextResponse("ok")
        return PlainTextResponse("not a link domain of this server", status_code=404)

    return [Route(TLS_ASK_PATH, tls_ask, methods=["GET"])]
