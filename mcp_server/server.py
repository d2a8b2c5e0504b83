"""Building the MCP server: every catalogued endpoint marked `tool` becomes a tool named like its operation.

Two ways to find out who is calling:
- over HTTP, the bearer credential checked by the SDK's auth middleware on every request (an OAuth access
  token for this resource, or a workspace API key) carries the `Principal` in its claims;
- over stdio, the API key in `OUTREACH_API_KEY`, checked again on every call so that revoking it takes
  effect at once.
"""

from __future__ import annotations

import functools
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.mcpserver.context import Context

from mcp_server.tools import OutreachMCP, PrincipalSource, register_endpoint_tool
from mcp_server.toolsets import instructions, server_selection, toolset_names
from outreach_core.auth.authenticate import authenticate_api_key
from outreach_core.catalog import all_endpoints
from outreach_core.kernel.context import Principal
from outreach_core.kernel.endpoint import AnyEndpoint
from outreach_core.kernel.errors import Unauthorized
from outreach_core.kernel.runtime import Caller, Runtime


def principal_from_request(ctx: Context[Any, Any]) -> Principal:
    """The caller of an HTTP MCP request, as verified by the bearer middleware for this very request."""
    request = ctx.request_context.request
    user = getattr(request, "user", None) if request is not None else None
    if not isinstance(user, AuthenticatedUser) or not user.access_token.claims:
        raise Unauthorized("Missing or invalid credential.")
    return Principal(**user.access_token.claims["principal"])


def http_principal_source() -> PrincipalSource:
    async def source(ctx: Context[Any, Any]) -> Caller:
        return principal_from_request(ctx)

    return source


def api_key_principal_source(api_key: str) -> PrincipalSource:
    """For stdio sessions: the key is checked on every call, inside the call's own transaction (revoked or
    expired keys stop at once)."""
    authenticate: Caller = functools.partial(authenticate_api_key, token=api_key)

    async def source(ctx: Context[Any, Any]) -> Caller:
        return authenticate

    return source


def build_mcp(
    runtime: Runtime,
    principal_source: PrincipalSource,
    *,
    endpoints: list[AnyEndpoint] | None = None,
    **server_kwargs: Any,
) -> OutreachMCP:
    """An MCP server exposing every endpoint marked `tool` that the server's tool sets and read-only mode
    (`OUTREACH_MCP_TOOLSETS`, `OUTREACH_MCP_READ_ONLY`) allow; a set name no tool has raises
    `UnknownToolset`."""
    tools = [e for e in (endpoints if endpoints is not None else all_endpoints()) if e.tool]
    settings = runtime.settings
    selection = server_selection(settings.mcp_toolset_names, settings.mcp_read_only, toolset_names(tools))
    tools = [e for e in tools if selection.allows(e)]
    mcp = OutreachMCP("outreach", instructions=instructions(tools), version="1.0.0", **server_kwargs)
    for endpoint in tools:
        register_endpoint_tool(mcp, runtime, endpoint, principal_source)
    return mcp
