"""The link domain: the subdomain that carries the links of every email (unsubscribe, clicks, opens) instead
of this server's own address (spec: "Link domain"; docs/link-domain.md)."""

from __future__ import annotations

import dataclasses
from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import link_domains
from outreach_core.kernel.errors import Conflict
from outreach_core.kernel.wire import Ok
from outreach_core.link_domain.prepare import Checked
from outreach_core.link_domain.rules import (
    Dns,
    decide,
    link_target,
    message,
    refuse_replacing,
)
from outreach_core.link_domain.schemas import (
    CheckLinkQuery,
    CnameRecord,
    LinkCname,
    LinkDomain,
    SetLinkDomainIn,
)
from outreach_core.link_domain.store import (
    TAKEN,
    holder,
    link_domain_row,
    release_failed,
    suggestion,
    write_check,
    write_claim,
)


async def get_link_domain(ctx: WorkspaceContext) -> LinkDomain:
    """Show the workspace's link domain: the subdomain (e.g. links.example.com) that links in emails use.

    `status` is none, pending_dns (publish `record`: a CNAME from the host name to this server), pending_tls
    (DNS is right, the certificate is coming), active (links in emails use it) or failed (no DNS for a
    day); `message` says what to do next. With nothing set, `suggestion` proposes links.<sending domain>.
    `required` says whether campaigns on this server can launch without an active one."""
    return await _shown(ctx)


async def set_link_domain(ctx: WorkspaceContext, body: SetLinkDomainIn, prepared: Checked) -> LinkDomain:
    """Set the workspace's link domain to `hostname`, a subdomain of a domain you own (links.example.com).

    Returns the CNAME `record` to publish at the DNS provider; the service checks DNS every minute for the
    first hour, then hourly, and switches links to it (status active) once DNS and the certificate are both
    ready. Replacing an active link domain with another host name breaks links in emails already sent and
    needs replace: true (refused with 409 otherwise). Setting the same host name again checks it now."""
    current = await link_domain_row(ctx, for_update=True)
    if current is not None:
        refuse_replacing(current.status, current.hostname, body.hostname, replace=body.replace)
        if current.hostname == body.hostname:  # set again: checked now, the schedule restarted
            return await _record_check(ctx, current, prepared, restart=True)
    held = await holder(ctx, body.hostname)
    if held is not None and held[0] != ctx.workspace_id:
        if held[1] != "failed":
            raise Conflict(TAKEN.format(hostname=body.hostname))
        await release_failed(ctx, body.hostname)
    decision = decide(
        previous="none",
        previous_tls="none",
        verified_at=None,
        dns=prepared.dns,
        tls=prepared.tls,
        since=ctx.now,
        now=ctx.now,
    )
    if decision.status == "pending_tls" and prepared.tls.result == "untested":
        # DNS is right: the certificate is tried by the next worker pass, at once
        decision = dataclasses.replace(decision, next_check_at=ctx.now)
    await write_claim(ctx, body.hostname, decision, replacing=current is not None)
    return await _shown(ctx)


async def delete_link_domain(ctx: WorkspaceContext) -> Ok:
    """Remove the workspace's link domain. Links in emails already sent through it stop working, new emails
    use this server's own address, and where this server requires a link domain campaigns cannot launch
    until a new one is active."""
    await ctx.conn.execute(scoped(ctx, link_domains).delete())
    return Ok()


async def check_link_domain(ctx: WorkspaceContext, prepared: Checked | None) -> LinkDomain:
    """Check the workspace's link domain now: look its CNAME up and try a real TLS handshake for its
    certificate. A check also restarts the schedule (every minute for an hour, then hourly), so a failed
    link domain is tried again after its DNS record was fixed."""
    current = await link_domain_row(ctx, for_update=True)
    if current is None or prepared is None or current.hostname != prepared.hostname:
        return await _shown(ctx)  # nothing set, or changed meanwhile: show what is there
    return await _record_check(ctx, current, prepared, restart=True)


async def check_link_cname(ctx: WorkspaceContext, query: CheckLinkQuery, prepared: Dns) -> LinkCname:
    """Check DNS only: whether links.<domain> has the CNAME record to this server's link target. Saves
    nothing; use it to see whether a record was published before setting the link domain."""
    return LinkCname(
        hostname=f"links.{query.domain}",
        target=link_target(ctx.settings.link_target, ctx.settings.public_url),
        dns=prepared.state,
    )


async def _record_check(
    ctx: WorkspaceContext, current: Any, prepared: Checked, *, restart: bool = False
) -> LinkDomain:
    since = ctx.now if restart and current.status != "active" else current.since
    decision = decide(
        previous=current.status,
        previous_tls=current.tls,
        verified_at=current.verified_at,
        dns=prepared.dns,
        tls=prepared.tls,
        since=since,
        now=ctx.now,
    )
    await write_check(ctx, ctx.workspace_id, current.hostname, decision)
    return await _shown(ctx)


async def _shown(ctx: WorkspaceContext) -> LinkDomain:
    settings = ctx.settings
    target = link_target(settings.link_target, settings.public_url)
    row = await link_domain_row(ctx)
    if row is None:
        return LinkDomain(
            hostname=None,
            status="none",
            dns="unknown",
            tls="none",
            message=message(
                "none",
                hostname=None,
                target=target,
                dns="unknown",
                tls="none",
                reason=None,
                tls_port=settings.link_tls_port,
            ),
            record=None,
            suggestion=await suggestion(ctx),
            required=settings.link_domain_required,
            verified_at=None,
            checked_at=None,
        )
    return LinkDomain.from_row(
        row,
        message=message(
            row.status,
            hostname=row.hostname,
            target=target,
            dns=row.dns,
            tls=row.tls,
            reason=row.reason,
            tls_port=settings.link_tls_port,
        ),
        record=CnameRecord(name=row.hostname, value=target) if target else None,
        suggestion=None,
        required=settings.link_domain_required,
    )
