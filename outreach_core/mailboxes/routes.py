"""Sending-IP routes: which outbound proxy (the operator's `outreach ip add`) a mailbox's SMTP goes through.

A mailbox's `sendingIp.route` is:

- `own`: no sending IP is registered on this server: SMTP connects from the server itself (as before);
- `shared`: through a shared proxy, which carries the mailboxes of many workspaces;
- `dedicated`: through a dedicated proxy serving only the mailbox's workspace (its plan's included dedicated
  IPs plus add-ons bought with `POST /billing/setDedicatedIps`);
- `waiting`: proxies are registered but none has room: the mailbox is saved and tested, sends nothing, and
  is routed as soon as one has room (a proxy added, a mailbox deleted); the `sending-ips` worker checks every
  minute and `outreach ip add` at once.

The rules (`choose_route`), applied when a mailbox is created and to waiting mailboxes: a dedicated proxy
already serving the workspace with room first; else a free dedicated proxy, taken for the workspace, when
it is allowed more dedicated IPs than it has; else the shared proxy with room carrying the fewest of the
workspace's mailboxes (then the fewest in all), so that a workspace's mailboxes spread over IPs; else
`waiting`. A mailbox stays on its IP (its reputation is the IP's) until the operator removes the proxy; its
mailboxes then wait for another. Capacity is counted in mailboxes (`--capacity`, default 50 shared, 20
dedicated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from sqlalchemy import func

from outreach_core.billing.rules import in_force
from outreach_core.billing.store import billing_row
from outreach_core.kernel.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    system_scope,
    unscoped,
    workspace_itself,
)
from outreach_core.kernel.crypto import decrypt, encrypt
from outreach_core.kernel.db.tables import mailboxes, sending_ips
from outreach_core.kernel.errors import InvalidInput, NotFound
from outreach_core.kernel.ids import new_id

PROXY_SECRET = b"sending-ip-proxy"
DEFAULT_CAPACITY = {"shared": 50, "dedicated": 20}
PROXY_SCHEMES = ("socks5", "socks5h", "socks4", "http")
Kind = Literal["shared", "dedicated"]
Route = Literal["own", "shared", "dedicated", "waiting"]


@dataclass(frozen=True)
class SendingIpInfo:
    """A sending IP as `outreach ip list` shows it (never the proxy's credentials)."""

    id: str
    proxy: str
    kind: str
    country: str | None
    ip: str | None
    capacity: int
    mailboxes: int
    dedicated_to: str | None

    def line(self) -> str:
        where = f"{self.kind} {self.proxy}"
        extra = [f"country {self.country}" if self.country else "", f"ip {self.ip}" if self.ip else ""]
        owner = f" for workspace {self.dedicated_to}" if self.dedicated_to else ""
        details = " ".join(x for x in extra if x)
        return f"{self.id} {where} {self.mailboxes}/{self.capacity} mailboxes{owner} {details}".rstrip()


def proxy_problem(url: str) -> str | None:
    """Why `url` is not a proxy address this server can use, or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "not a URL"
    if parts.scheme not in PROXY_SCHEMES:
        return f"the scheme must be one of {', '.join(s + '://' for s in PROXY_SCHEMES)}"
    if not parts.hostname or port is None:
        return "the address needs a host and a port (socks5://HOST:PORT)"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "the address is only scheme://[user:password@]host:port"
    return None


async def add_sending_ip(
    ctx: SystemContext,
    proxy: str,
    kind: Kind,
    country: str | None = None,
    ip: str | None = None,
    capacity: int | None = None,
) -> SendingIpInfo:
    """Operator command: register an outbound proxy as a sending IP, then route the mailboxes waiting for
    one."""
    problem = proxy_problem(proxy)
    if problem is not None:
        raise InvalidInput.field("proxy", problem)
    if country is not None and (len(country) != 2 or not country.isalpha()):
        raise InvalidInput.field("country", "a two-letter country code such as DE")
    size = DEFAULT_CAPACITY[kind] if capacity is None else capacity
    if not 1 <= size <= 10_000:
        raise InvalidInput.field("capacity", "between 1 and 10,000 mailboxes")
    parts = urlsplit(proxy)
    new = {
        "id": new_id("ip"),
        "proxy_encrypted": encrypt(ctx.settings, proxy, PROXY_SECRET),
        "proxy_host": f"{parts.scheme}://{parts.hostname}:{parts.port}",
        "kind": kind,
        "country": country.upper() if country else None,
        "ip": ip,
        "capacity": size,
        "dedicated_to": None,
        "created_at": ctx.now,
    }
    await ctx.conn.execute(unscoped(sending_ips).insert(new))
    await route_waiting_mailboxes(ctx)
    return next(i for i in await list_sending_ips(ctx) if i.id == new["id"])


async def list_sending_ips(ctx: SystemContext) -> list[SendingIpInfo]:
    """Operator command: every sending IP with the mailboxes it carries, oldest first."""
    counts = await _mailbox_counts(ctx)
    rows = (await ctx.conn.execute(unscoped(sending_ips).select().order_by(sending_ips.c.created_at))).all()
    return [
        SendingIpInfo(
            r.id, r.proxy_host, r.kind, r.country, r.ip, r.capacity, counts.get(r.id, 0), r.dedicated_to
        )
        for r in rows
    ]


async def remove_sending_ip(ctx: SystemContext, ip_id: str) -> int:
    """Operator command: remove a sending IP; its mailboxes wait for another one (routed at once where one
    has room). Returns how many mailboxes it carried."""
    table = unscoped(sending_ips)
    if (
        await ctx.conn.execute(table.select(sending_ips.c.id).where(sending_ips.c.id == ip_id))
    ).first() is None:
        raise NotFound("sending IP", ip_id)
    boxes = system_scope(mailboxes)
    moved = await ctx.conn.execute(
        boxes.update()
        .where(mailboxes.c.sending_ip_id == ip_id)
        .values(sending_route="waiting", sending_ip_id=None)
    )
    await ctx.conn.execute(table.delete().where(sending_ips.c.id == ip_id))
    await route_waiting_mailboxes(ctx)
    return int(moved.rowcount or 0)


async def proxy_urls(ctx: SystemContext | WorkspaceContext, ip_ids: set[str]) -> dict[str, str]:
    """The proxy addresses (credentials included) of these sending IPs, for the SMTP connections."""
    if not ip_ids:
        return {}
    query = unscoped(sending_ips).select(sending_ips.c.id, sending_ips.c.proxy_encrypted)
    rows = (await ctx.conn.execute(query.where(sending_ips.c.id.in_(sorted(ip_ids))))).all()
    return {r.id: decrypt(ctx.settings, r.proxy_encrypted, PROXY_SECRET) for r in rows}


async def route_new_mailbox(ctx: WorkspaceContext, mailbox_id: str) -> Route:
    """Give a mailbox just created its route (see the module docstring); returns it."""
    return await _route(ctx, mailbox_id, ctx.workspace_id, await dedicated_allowance(ctx))


async def dedicated_allowance(ctx: WorkspaceContext) -> int:
    """Dedicated IPs the workspace may use: its plan's included ones plus the add-ons it bought."""
    row = await billing_row(ctx)
    plan = in_force(row, ctx.now)
    return (plan.dedicated_ips_included if plan else 0) + int(row.dedicated_ip_addons or 0)


async def route_waiting_mailboxes(ctx: SystemContext) -> int:
    """Route every waiting mailbox that can be (oldest first); returns how many were routed. The
    `sending-ips` worker runs it every minute."""
    boxes = system_scope(mailboxes)
    waiting = (
        await ctx.conn.execute(
            boxes.select(mailboxes.c.id, mailboxes.c.workspace_id)
            .where(mailboxes.c.sending_route == "waiting")
            .order_by(mailboxes.c.created_at, mailboxes.c.id)
        )
    ).all()
    routed = 0
    allowances: dict[str, int] = {}
    for box in waiting:
        if box.workspace_id not in allowances:
            wctx = as_workspace(ctx, workspace_itself(box.workspace_id, "sending-ips"))
            allowances[box.workspace_id] = await dedicated_allowance(wctx)
        if await _route(ctx, box.id, box.workspace_id, allowances[box.workspace_id]) != "waiting":
            routed += 1
    return routed


async def _route(
    ctx: SystemContext | WorkspaceContext, mailbox_id: str, workspace_id: str, allowance: int
) -> Route:
    route, ip_id = await choose_route(ctx, workspace_id, allowance)
    await ctx.conn.execute(
        system_scope(mailboxes)
        .update()
        .where(mailboxes.c.id == mailbox_id)
        .values(sending_route=route, sending_ip_id=ip_id)
    )
    return route


async def choose_route(
    ctx: SystemContext | WorkspaceContext, workspace_id: str, allowance: int
) -> tuple[Route, str | None]:
    """The route and sending IP a new mailbox of `workspace_id` gets now (see the module docstring). Locks
    the sending IPs (PostgreSQL) so that two mailboxes created at once cannot both take an IP's last place."""
    rows = (
        await ctx.conn.execute(
            unscoped(sending_ips)
            .select()
            .order_by(sending_ips.c.created_at, sending_ips.c.id)
            .with_for_update()
        )
    ).all()
    if not rows:
        return "own", None
    counts = await _mailbox_counts(ctx)
    mine = await _mailbox_counts(ctx, workspace_id)

    def room(r: Any) -> bool:
        return bool(counts.get(r.id, 0) < r.capacity)

    ours = [r for r in rows if r.kind == "dedicated" and r.dedicated_to == workspace_id]
    with_room = [r for r in ours if room(r)]
    if with_room:
        return "dedicated", min(with_room, key=lambda r: counts.get(r.id, 0)).id
    if len(ours) < allowance:
        free = next((r for r in rows if r.kind == "dedicated" and r.dedicated_to is None), None)
        if free is not None:
            await ctx.conn.execute(
                unscoped(sending_ips)
                .update()
                .where(sending_ips.c.id == free.id)
                .values(dedicated_to=workspace_id)
            )
            return "dedicated", free.id
    shared = [r for r in rows if r.kind == "shared" and room(r)]
    if shared:
        return "shared", min(shared, key=lambda r: (mine.get(r.id, 0), counts.get(r.id, 0))).id
    return "waiting", None


async def _mailbox_counts(
    ctx: SystemContext | WorkspaceContext, workspace_id: str | None = None
) -> dict[str, int]:
    boxes = system_scope(mailboxes)
    query = boxes.select(mailboxes.c.sending_ip_id, func.count().label("n")).where(
        mailboxes.c.sending_ip_id.is_not(None)
    )
    if workspace_id is not None:
        query = query.where(mailboxes.c.workspace_id == workspace_id)
    rows = (await ctx.conn.execute(query.group_by(mailboxes.c.sending_ip_id))).all()
    return {r.sending_ip_id: int(r.n) for r in rows}


async def sending_ip_rows(ctx: WorkspaceContext, ids: set[str]) -> dict[str, Any]:
    """The sending IPs with these ids (what a mailbox shows as `sendingIp.country` and `ip`)."""
    if not ids:
        return {}
    query = unscoped(sending_ips).select(sending_ips.c.id, sending_ips.c.country, sending_ips.c.ip)
    rows = (await ctx.conn.execute(query.where(sending_ips.c.id.in_(sorted(ids))))).all()
    return {r.id: r for r in rows}
