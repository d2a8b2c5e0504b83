"""Where the links of a workspace's emails point: the one place that decides it."""

from __future__ import annotations

from outreach_core.context import SystemContext


async def tracking_base_url(ctx: SystemContext, workspace_id: str) -> str:
    """The base URL (scheme and host, no trailing slash) of the tracking and unsubscribe links in the emails
    of workspace `workspace_id`: its active link domain once link domains exist, else the server's public
    URL (`OUTREACH_PUBLIC_URL`). Called once per workspace per sending pass and per preview."""
    del workspace_id  # the active link domain will be looked up here (docs/tracking.md, "Link base")
    return ctx.settings.public_url
