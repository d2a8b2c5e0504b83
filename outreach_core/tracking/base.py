"""Where the links of a workspace's emails point: the one place that decides it."""

from __future__ import annotations

from outreach_core.kernel.context import SystemContext, WorkspaceContext
from outreach_core.link_domain.store import active_link_host


async def tracking_base_url(ctx: SystemContext | WorkspaceContext, workspace_id: str) -> str:
    """The base URL (scheme and host, no trailing slash) of the tracking and unsubscribe links in the emails
    of workspace `workspace_id`: `https://<its link domain>` while the link domain is active (with
    `OUTREACH_LINK_TLS_PORT` when it is not 443: the port its certificate was checked on), else the server's
    public URL (`OUTREACH_PUBLIC_URL`). Called once per workspace per sending pass and per preview."""
    host = await active_link_host(ctx, workspace_id)
    if host is None:
        return ctx.settings.public_url.rstrip("/")
    port = ctx.settings.link_tls_port
    return f"https://{host}" if port == 443 else f"https://{host}:{port}"
