"""The `/api/v1` Starlette application."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from http_api.docs_page import docs_routes
from http_api.handlers import error_response, make_file_handler, make_handler
from http_api.openapi import build_openapi
from http_api.request_log import internal_error_handler
from outreach_core.catalog import all_endpoints, all_files
from outreach_core.kernel.endpoint import AnyEndpoint, Endpoint
from outreach_core.kernel.errors import MethodNotAllowed, NotFound, OutreachError
from outreach_core.kernel.runtime import Runtime
from outreach_core.workspace.operations import ping
from outreach_core.workspace.schemas import Ping

PING = Endpoint("GET", "/ping", ping, Ping, tool=False, read_only=True, tag="workspace")
PUBLIC = {"ping"}


def api_endpoints() -> list[AnyEndpoint]:
    """Everything served under /api/v1, including the public ping."""
    return [PING, *all_endpoints()]


def build_api(runtime: Runtime) -> Starlette:
    endpoints = api_endpoints()
    openapi = build_openapi(
        endpoints, server_url=runtime.settings.public_url, public=PUBLIC, files=all_files()
    )

    async def openapi_json(_: Request) -> Response:
        return JSONResponse(openapi)

    routes = [Route("/openapi.json", openapi_json, methods=["GET"])]
    # files (charts, CSV) first: `/campaigns/stats.png` is no `/campaigns/{id}`
    routes += [Route(f.path, make_file_handler(runtime, f), methods=["GET"]) for f in all_files()]
    routes += docs_routes(runtime.settings.public_url)
    routes += [
        Route(e.path, make_handler(runtime, e, public=e.name in PUBLIC), methods=[e.method], name=e.name)
        for e in endpoints
    ]

    return Starlette(routes=routes, exception_handlers=JSON_HTTP_ERRORS)


async def _http_error(_: Request, exc: Exception) -> Response:
    """Routing errors (unknown path, wrong method) in the service's error format."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(NotFound("route"))
    if exc.status_code == 405:
        return error_response(MethodNotAllowed("Method not allowed on this path."))
    return error_response(OutreachError(exc.detail or "Bad request."))


JSON_HTTP_ERRORS: dict[Any, Any] = {HTTPException: _http_error, Exception: internal_error_handler}
