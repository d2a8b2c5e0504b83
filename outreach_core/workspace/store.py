"""A workspace's rows as its operations and endpoints read them."""

from __future__ import annotations

from outreach_core.kernel.context import (
    WorkspaceContext,
    scoped,
)
from outreach_core.kernel.db.tables import members, users
from outreach_core.kernel.errors import NotFound
from outreach_core.workspace.schemas import (
    Member,
    MemberUser,
)


async def get_member(ctx: WorkspaceContext, id: str) -> Member:
    m = scoped(ctx, members)
    r = (
        await ctx.conn.execute(
            m.select(m.c.id, m.c.user_id, m.c.role, m.c.created_at, users.c.name, users.c.email)
            .join(users, users.c.id == m.c.user_id)
            .where(m.c.id == id)
        )
    ).one_or_none()
    if r is None:
        raise NotFound("member", id)
    return Member.from_row(r, user=MemberUser.from_row(r))
