"""A workspace's mailboxes as the operations and their pre-transaction steps read them: one row, an
address already connected, and the plan's mailbox limit."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from outreach_core.billing.rules import in_force
from outreach_core.billing.store import plan_row
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.crypto import encrypt
from outreach_core.kernel.db.tables import mailboxes
from outreach_core.kernel.errors import Conflict, NotFound, QuotaExceeded
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.ports import MailServer
from outreach_core.mailboxes import rules
from outreach_core.mailboxes.servers import domain_of, server_columns


async def mailbox_row(ctx: WorkspaceContext, id: str) -> Any:
    row = (await ctx.conn.execute(scoped(ctx, mailboxes).select().where(mailboxes.c.id == id))).one_or_none()
    if row is None:
        raise NotFound("mailbox", id)
    return row


async def slots_left(ctx: WorkspaceContext) -> int | None:
    """Mailboxes the plan still allows; None without a limit (no active plan, or an unlimited plan)."""
    plan = in_force(await plan_row(ctx), ctx.now)
    if plan is None:
        return None
    limit = plan.mailboxes
    if limit is None:
        return None
    count = (await ctx.conn.execute(scoped(ctx, mailboxes).select(func.count()))).scalar_one()
    return max(0, limit - int(count))


def ensure_room(slots: int | None, adding: int) -> None:
    """Refuse with 429 `quota_exceeded` when `adding` mailboxes would pass the plan's mailbox limit."""
    if slots is not None and adding > slots:
        raise QuotaExceeded(
            f"The plan has {slots} mailbox slot{'' if slots == 1 else 's'} left and this would add {adding}. "
            "Delete a mailbox or change plan.",
            {"slotsLeft": slots, "adding": adding},
        )


async def ensure_new(ctx: WorkspaceContext, email: str) -> None:
    found = (
        await ctx.conn.execute(
            scoped(ctx, mailboxes).select(mailboxes.c.id).where(mailboxes.c.email == email)
        )
    ).first()
    if found is not None:
        raise Conflict(f"The mailbox {email} is connected already.", {"email": email, "id": found.id})


async def check_new(ctx: WorkspaceContext, email: str) -> None:
    await ensure_new(ctx, email)
    ensure_room(await slots_left(ctx), 1)


async def import_state(ctx: WorkspaceContext, emails: list[str]) -> tuple[set[str], int | None]:
    mb = scoped(ctx, mailboxes)
    taken = (
        await ctx.conn.execute(mb.select(mailboxes.c.email).where(mailboxes.c.email.in_(emails)))
    ).scalars()
    return {str(e) for e in taken}, await slots_left(ctx)


def new_mailbox_row(
    ctx: WorkspaceContext,
    email: str,
    provider: str,
    display_name: str | None,
    daily_limit: int,
    smtp: MailServer,
    imap: MailServer,
    password: str,
) -> dict[str, Any]:
    """A new mailbox row (active, default limits and ramp), its password encrypted."""
    return {
        "id": new_id("mbx"),
        "email": email,
        "domain": domain_of(email),
        "display_name": display_name,
        "provider": provider,
        "status": "active",
        "status_reason": None,
        "daily_limit": daily_limit,
        "ramp_enabled": rules.DEFAULT_RAMP_ENABLED,
        "ramp_start": rules.DEFAULT_RAMP_START,
        "ramp_increment": rules.DEFAULT_RAMP_INCREMENT,
        "ramp_started_on": rules.local_day(ctx.now, rules.DEFAULT_TIMEZONE).isoformat(),
        "min_gap_s": rules.DEFAULT_MIN_GAP_S,
        "max_gap_s": rules.DEFAULT_MAX_GAP_S,
        "timezone": rules.DEFAULT_TIMEZONE,
        "password_encrypted": encrypt(ctx.settings, password),
        "inbox_poll": False,
        "last_tested_at": ctx.now,
        "sent_count": 0,
        "created_at": ctx.now,
        **server_columns(smtp, imap),
    }
