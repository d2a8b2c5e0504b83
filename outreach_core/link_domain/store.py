"""The link domain's rows: the caller's own (through `scoped`), and the few cross-workspace reads the service
needs by host name (the reverse proxy's `/tls/ask`, the host gate, a host name held by another workspace)
or by workspace (`active_link_host`, for the links of every email the sender builds)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from outreach_core.kernel.context import SystemContext, WorkspaceContext, scoped, system_scope
from outreach_core.kernel.db.tables import link_domains, mailboxes, workspaces
from outreach_core.kernel.errors import Conflict
from outreach_core.link_domain.rules import Decision, is_free_mail, suggested_hostname

TAKEN = (
    "{hostname} is already the link domain of another workspace on this server; choose another subdomain "
    "of your domain."
)
SERVED = ("pending_tls", "active")
"""States in which the host name's DNS was seen pointing at this server: the reverse proxy may get a
certificate for it (`/tls/ask`), and requests for it serve only links (the host gate)."""


async def link_domain_row(ctx: WorkspaceContext, *, for_update: bool = False) -> Any | None:
    """The workspace's link domain row, or None when none is set."""
    stmt = scoped(ctx, link_domains).select()
    if for_update and not ctx.settings.is_sqlite:
        stmt = stmt.with_for_update()
    return (await ctx.conn.execute(stmt)).one_or_none()


async def sending_domain(ctx: WorkspaceContext) -> str | None:
    """The workspace's sending domain: the domain most of its mailboxes send from (the first by name on a
    tie; free-mail domains such as gmail.com left out: nobody adds records there), else the one given at
    onboarding; None when there is neither."""
    boxes = scoped(ctx, mailboxes)
    count = func.count().label("n")
    domains = (
        await ctx.conn.execute(
            boxes.select(boxes.c.domain, count)
            .group_by(boxes.c.domain)
            .order_by(count.desc(), boxes.c.domain)
            .limit(20)
        )
    ).scalars()
    found = next((d for d in domains if not is_free_mail(d)), None)
    if found is None:
        ws = scoped(ctx, workspaces)
        found = (await ctx.conn.execute(ws.select(ws.c.sending_domain))).scalar_one_or_none()
    return str(found) if found and not is_free_mail(found) else None


async def suggestion(ctx: WorkspaceContext) -> str | None:
    domain = await sending_domain(ctx)
    return suggested_hostname(domain) if domain else None


async def write_claim(ctx: WorkspaceContext, hostname: str, decision: Decision, *, replacing: bool) -> None:
    """Store `hostname` as the workspace's link domain with the state of its first check."""
    table = scoped(ctx, link_domains)
    if replacing:
        await ctx.conn.execute(table.delete())
    row = {
        "hostname": hostname,
        **state_values(decision),
        "checked_at": ctx.now,
        "created_at": ctx.now,
        "updated_by": ctx.user_id or None,
    }
    try:
        await ctx.conn.execute(table.insert(row))
    except IntegrityError:  # another workspace claimed it at the same moment (the transaction is rolled back)
        raise Conflict(TAKEN.format(hostname=hostname)) from None


async def write_check(ctx: SystemContext, workspace_id: str, hostname: str, decision: Decision) -> bool:
    """Record a check of `hostname` for `workspace_id`; False when the link domain changed meanwhile (set
    to another host name or removed), and nothing is written."""
    table = system_scope(link_domains)
    done = await ctx.conn.execute(
        table.update()
        .where(table.c.workspace_id == workspace_id, table.c.hostname == hostname)
        .values(**state_values(decision), checked_at=ctx.now)
    )
    return bool(done.rowcount)


def state_values(decision: Decision) -> dict[str, Any]:
    """The columns a decision sets."""
    return {
        "status": decision.status,
        "dns": decision.dns,
        "tls": decision.tls,
        "reason": decision.reason[:500] if decision.reason else None,
        "since": decision.since,
        "next_check_at": decision.next_check_at,
        "verified_at": decision.verified_at,
    }


async def holder(ctx: WorkspaceContext, hostname: str) -> tuple[str, str] | None:
    """(workspace id, status) of the workspace whose link domain `hostname` is, if any."""
    table = system_scope(link_domains)
    row = (
        await ctx.conn.execute(
            table.select(table.c.workspace_id, table.c.status).where(table.c.hostname == hostname)
        )
    ).one_or_none()
    return (row.workspace_id, row.status) if row is not None else None


async def release_failed(ctx: WorkspaceContext, hostname: str) -> None:
    """Free `hostname` from another workspace whose claim on it `failed` (no DNS for a day: whoever owns
    the domain is not that workspace), so the domain's owner can use it."""
    table = system_scope(link_domains)
    await ctx.conn.execute(table.delete().where(table.c.hostname == hostname, table.c.status == "failed"))


def _conn(conn_or_ctx: AsyncConnection | SystemContext) -> AsyncConnection:
    return conn_or_ctx.conn if isinstance(conn_or_ctx, SystemContext) else conn_or_ctx


async def active_link_host(conn_or_ctx: AsyncConnection | SystemContext, workspace_id: str) -> str | None:
    """The host name links in the workspace's emails use: its link domain when it is active, else None (the
    caller then uses OUTREACH_PUBLIC_URL). For the link builder (tracking, unsubscribe links)."""
    table = system_scope(link_domains)
    found = (
        await _conn(conn_or_ctx).execute(
            table.select(table.c.hostname).where(
                table.c.workspace_id == workspace_id, table.c.status == "active"
            )
        )
    ).scalar_one_or_none()
    return str(found) if found is not None else None


async def active_link_hosts(
    conn_or_ctx: AsyncConnection | SystemContext, workspace_ids: Iterable[str]
) -> dict[str, str]:
    """`active_link_host` for many workspaces at once (a sender pass): workspace id -> host name, only for
    those with an active link domain."""
    ids = sorted(set(workspace_ids))
    if not ids:
        return {}
    table = system_scope(link_domains)
    rows = await _conn(conn_or_ctx).execute(
        table.select(table.c.workspace_id, table.c.hostname).where(
            table.c.workspace_id.in_(ids), table.c.status == "active"
        )
    )
    return {r.workspace_id: r.hostname for r in rows}


async def served_hosts(ctx: SystemContext) -> frozenset[str]:
    """Every workspace's link domain whose DNS was seen pointing here (`SERVED`): the host gate's list."""
    table = system_scope(link_domains)
    rows = await ctx.conn.execute(table.select(table.c.hostname).where(table.c.status.in_(SERVED)))
    return frozenset(str(h) for h in rows.scalars())


async def is_served_host(ctx: SystemContext, /, hostname: str) -> bool:
    """Whether `hostname` is a workspace's link domain whose DNS points here (`GET /tls/ask`)."""
    table = system_scope(link_domains)
    found = await ctx.conn.execute(
        table.select(table.c.workspace_id).where(table.c.hostname == hostname, table.c.status.in_(SERVED))
    )
    return found.first() is not None
