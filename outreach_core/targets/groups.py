"""Lists and labels, the two named groups of leads: names unique in the workspace, and a label's lead count
(a list's is kept per list, `targets.list_sizes`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, Table, func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.errors import Conflict


def with_lead_counts(
    ctx: WorkspaceContext, groups: Table, members: Table, group_key: str, *columns: Any
) -> Select[Any]:
    """`columns` of the workspace's `groups` (labels) with `leads`, how many leads each holds: one
    grouped count of `members` (whose `group_key` column names the group) over the workspace's groups, joined
    once."""
    own = scoped(ctx, groups)
    key = members.c[group_key]
    counts = (
        scoped(ctx, members)
        .select(key, func.count().label("n"))
        .where(key.in_(own.select(groups.c.id)))
        .group_by(key)
        .subquery()
    )
    return own.select(*columns, func.coalesce(counts.c.n, 0).label("leads")).outerjoin(
        counts, counts.c[group_key] == groups.c.id
    )


async def ensure_name_free(
    ctx: WorkspaceContext, groups: Table, what: str, name: str, except_id: str | None = None
) -> None:
    """Refuse with 409 `conflict` when another of the workspace's `groups` (a `what`: list, label) is named
    `name`."""
    own = scoped(ctx, groups)
    stmt = own.select(groups.c.id).where(groups.c.name == name)
    if except_id is not None:
        stmt = stmt.where(groups.c.id != except_id)
    if (await ctx.conn.execute(stmt)).first() is not None:
        raise Conflict(f"A {what} named {name!r} exists already.", {"name": name})
