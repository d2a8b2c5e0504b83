"""Which worker process reads which mailbox: leases in `inbox_leases` (holder, expires_at).

Each `inbox` worker process calls `hold` every few seconds, in one transaction: it renews the leases it holds,
gives back those of mailboxes that should no longer be read (paused, quarantined, deleted, in an error the
inbox did not cause), deletes leases that expired (their process died or hung) and takes free mailboxes up to
its limit. A mailbox is therefore read by at most one process at a time on PostgreSQL; a process that stops
gives its leases back (`release`) so another takes them over at once, one that dies loses them when they
expire (`OUTREACH_INBOX_LEASE_S`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, func, literal, not_, or_

from outreach_core.kernel.bulk import insert_skipping_duplicates
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import inbox_leases, mailboxes
from outreach_core.kernel.ports import MailServer
from outreach_core.kernel.wire import RowRecord

FIRST_SYNC_WINDOW = timedelta(days=3)
"""On a mailbox's first sync, mail that arrived up to this long before it was connected is read too."""
TAKE_PER_CALL = 100
"""At most this many free mailboxes are taken by one `hold` (random ones), so processes starting together
share them out."""


@dataclass(frozen=True)
class InboxMailbox(RowRecord):
    """What a worker task needs to read one mailbox."""

    id: str
    workspace_id: str
    email: str
    server: MailServer
    password_encrypted: str
    inbox_poll: bool
    inbox_since: datetime
    oauth_encrypted: str | None = None  # an OAuth mailbox's tokens (mailboxes/oauth_tokens.py)

    @property
    def fingerprint(self) -> tuple[object, ...]:
        """Changes when the task must start again (new server settings, password or poll mode)."""
        return (self.server, self.password_encrypted, self.oauth_encrypted, self.inbox_poll)


def readable() -> ColumnElement[bool]:
    """Mailboxes the inbox reads: active ones, and those in an `error` the inbox itself set (so they
    recover by themselves once a login works again)."""
    return or_(
        mailboxes.c.status == "active",
        and_(mailboxes.c.status == "error", mailboxes.c.inbox_error.is_(True)),
    )


async def hold(
    ctx: SystemContext,
    holder: str,
    *,
    span_s: float,
    limit: int,
    workspace_ids: Sequence[str] | None = None,
) -> list[InboxMailbox]:
    """Renew, give back and take leases for `holder` (see the module docstring); returns every mailbox it
    holds afterwards. `workspace_ids` limits the process to those workspaces (tests, sharding)."""
    until = ctx.now + timedelta(seconds=span_s)
    mine = inbox_leases.c.holder == holder
    wanted = readable()
    if workspace_ids is not None:
        wanted = and_(wanted, mailboxes.c.workspace_id.in_(list(workspace_ids)))
    boxes, leases = system_scope(mailboxes), system_scope(inbox_leases)
    unreadable = boxes.select(mailboxes.c.id).where(not_(wanted))
    await ctx.conn.execute(leases.delete().where(mine, inbox_leases.c.mailbox_id.in_(unreadable)))
    await ctx.conn.execute(leases.update().where(mine).values(expires_at=until))
    await ctx.conn.execute(leases.delete().where(inbox_leases.c.expires_at < ctx.now))
    held = (await ctx.conn.execute(leases.select(func.count()).where(mine))).scalar_one()
    room = min(limit - int(held), TAKE_PER_CALL)
    if room > 0:
        free = (
            boxes.select(
                mailboxes.c.id,
                literal(holder, inbox_leases.c.holder.type),
                literal(until, inbox_leases.c.expires_at.type),
            )
            .where(wanted, mailboxes.c.id.not_in(leases.select(inbox_leases.c.mailbox_id)))
            .order_by(func.random())
            .limit(room)
        )
        await ctx.conn.execute(
            insert_skipping_duplicates(ctx, inbox_leases).from_select(
                ["mailbox_id", "holder", "expires_at"], free
            )
        )
    rows = (
        await ctx.conn.execute(
            boxes.select()
            .join(inbox_leases, inbox_leases.c.mailbox_id == mailboxes.c.id)
            .where(mine, wanted)
            .order_by(mailboxes.c.id)
        )
    ).all()
    found: list[InboxMailbox] = []
    for row in rows:
        since = row.inbox_since
        if since is None:
            since = row.created_at - FIRST_SYNC_WINDOW
            await ctx.conn.execute(
                boxes.update()
                .where(mailboxes.c.id == row.id, mailboxes.c.inbox_since.is_(None))
                .values(inbox_since=since)
            )
        found.append(
            InboxMailbox.from_row(
                row,
                server=MailServer(row.imap_host, row.imap_port, row.imap_security, row.imap_user),
                inbox_poll=bool(row.inbox_poll),
                inbox_since=since,
            )
        )
    return found


async def release(ctx: SystemContext, holder: str, mailbox_ids: list[str] | None = None) -> int:
    """Give back `holder`'s leases (all, or those of `mailbox_ids`); returns how many."""
    where = [inbox_leases.c.holder == holder]
    if mailbox_ids is not None:
        where.append(inbox_leases.c.mailbox_id.in_(mailbox_ids))
    result = await ctx.conn.execute(system_scope(inbox_leases).delete().where(*where))
    return int(result.rowcount or 0)


async def holds(ctx: SystemContext, mailbox_id: str, holder: str) -> bool:
    """Whether `holder` holds the mailbox's lease now; the lease row stays locked (`FOR UPDATE` on
    PostgreSQL) until the caller's transaction ends, so no other process takes it over meanwhile."""
    found = await ctx.conn.execute(
        system_scope(inbox_leases)
        .select(inbox_leases.c.holder)
        .where(inbox_leases.c.mailbox_id == mailbox_id, inbox_leases.c.holder == holder)
        .with_for_update()
    )
    return found.first() is not None
