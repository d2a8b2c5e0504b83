"""The one ASGI application: REST at /api/v1, MCP at /mcp with OAuth, the consent page, and the workers."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

from mcp.server.auth.routes import REGISTRATION_PATH
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount

from http_api.app import JSON_HTTP_ERRORS, build_api
from http_api.billing_pages import billing_routes
from http_api.link_host_gate import LinkHostGate
from http_api.mailbox_oauth_page import mailbox_oauth_routes
from http_api.protection import AddressRateLimit, RateLimit, RequestSizeLimit
from http_api.request_log import RequestContext
from http_api.tls_ask import tls_ask_routes
from http_api.tracking import TrackingLinks, tracking_recorder
from http_api.unsubscribe import unsubscribe_routes
from mcp_server.consent import consent_routes
from mcp_server.oauth_provider import OutreachOAuthProvider
from mcp_server.server import build_mcp, http_principal_source
from mcp_server.tools import OutreachMCP
from mcp_server.toolsets import ToolsetRouting, toolset_names
from outreach_app.ops.metrics import Metrics, RequestMetrics
from outreach_app.ops.routes import Ops, ops_routes
from outreach_core.kernel.runtime import Runtime
from workers.loop import run_workers
from workers.registry import ALL_WORKERS, select


def build_mcp_http(runtime: Runtime) -> OutreachMCP:
    settings = runtime.settings
    return build_mcp(
        runtime,
        http_principal_source(),
        auth_server_provider=OutreachOAuthProvider(runtime),
        auth=AuthSettings(
            issuer_url=settings.public_url,
            resource_server_url=settings.mcp_resource_url,
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
            service_documentation_url=f"{settings.public_url}/api/v1/openapi.json",
        ),
    )


def _transport_security(public_url: str) -> TransportSecuritySettings:
    parts = urlsplit(public_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[parts.netloc, f"{parts.hostname}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=[origin, "http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def _any_path(mount: Mount) -> Mount:
    """Let a mount match paths containing any character (Starlette's `.*` stops at a newline), so a
    strange path under /api/v1 still gets the API's JSON 404 instead of falling through."""
    mount.path_regex = re.compile(mount.path_regex.pattern, re.DOTALL)
    return mount


def build_app(
    runtime: Runtime,
    *,
    workers: list[str] | None = None,
    run_workers_in_process: bool = False,
    flush_usage: bool = True,
    worker_status_files: list[Path] | None = None,
) -> Starlette:
    """The whole service as one ASGI app.

    The usage flusher (which persists `lastUsedAt` of the credentials this process authenticated) runs with
    every app; the business workers run inside it only when asked (`outreach serve` without `--no-workers`).
    `worker_status_files`: what the worker process `outreach serve` started reports, for `/readyz` and
    `/metrics` (outreach_app/ops).
    """
    settings = runtime.settings
    mcp = build_mcp_http(runtime)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp", transport_security=_transport_security(settings.public_url)
    )

    recorder = tracking_recorder(runtime)  # click and open hits, committed in batches (docs/tracking.md)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        stop = asyncio.Event()
        background = [ALL_WORKERS["usage"]()] if flush_usage else []
        if run_workers_in_process:
            background += [w for w in select(workers) if w.name != "usage"]
        worker_task = asyncio.create_task(run_workers(runtime, background, stop)) if background else None
        with contextlib.suppress(Exception):  # hits of a process that died; a failure leaves them for later
            await recorder.replay()
        async with mcp.session_manager.run():
            try:
                yield
            finally:
                stop.set()
                await recorder.close()
                if worker_task is not None:
                    await worker_task

    # Self-hosting kit (issue 30): health, readiness and metrics of this process.
    ops = Ops(runtime.engine, Metrics(), settings.metrics_token, list(worker_status_files or []))
    routes = [
        *ops_routes(ops),
        _any_path(Mount("/api/v1", app=build_api(runtime))),
        *consent_routes(runtime),
        *unsubscribe_routes(runtime),
        *billing_routes(runtime),
        *tls_ask_routes(runtime),  # the reverse proxy's on-demand TLS question (docs/link-domain.md)
        *mailbox_oauth_routes(runtime),  # Google and Microsoft mailboxes over OAuth (issue 32)
        _any_path(Mount("/", app=ToolsetRouting(mcp_app, toolset_names(mcp.endpoints.values())))),
    ]
    middleware = [
        Middleware(RequestMetrics, metrics=ops.metrics),
        Middleware(TrackingLinks, runtime=runtime, recorder=recorder),  # /l/ and /o/ (docs/tracking.md)
        Middleware(RequestContext),
        Middleware(LinkHostGate, runtime=runtime),  # a link domain's host serves only links
        Middleware(RequestSizeLimit, max_bytes=settings.max_request_bytes),
        Middleware(RateLimit, per_minute=settings.rate_limit_per_minute, burst=settings.rate_limit_burst),
        Middleware(
            AddressRateLimit,
            count=settings.oauth_registrations_per_hour,
            window_s=3600,
            paths=[REGISTRATION_PATH],
        ),
    ]
    app = Starlette(
        routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers=JSON_HTTP_ERRORS
    )
    app.state.runtime = runtime
    app.state.mcp = mcp
    app.state.ops = ops
    app.state.tracking = recorder
    return app


def build_ops_app(runtime: Runtime) -> Starlette:
    """`/healthz`, `/readyz` and `/metrics` alone: what `outreach worker --port N` serves about itself."""
    ops = Ops(runtime.engine, Metrics(), runtime.settings.metrics_token)
    app = Starlette(routes=ops_routes(ops), middleware=[Middleware(RequestMetrics, metrics=ops.metrics)])
    app.state.ops = ops
    return app
