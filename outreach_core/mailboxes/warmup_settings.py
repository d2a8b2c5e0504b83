"""A mailbox's warmup settings as `update_mailbox` saves them and the mailbox object shows them
(docs/warmup.md). The pool itself (planning, sending, tending, the score) is `outreach_core.warmup`, which
uses this module; this module never uses it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import warmup_mailboxes
from outreach_core.mailboxes.schemas import Warmup, WarmupIn

DEFAULT_TARGET = 20
DEFAULT_RAMP_START = 2
DEFAULT_RAMP_INCREMENT = 2
DEFAULT_REPLY_RATE = 30


def warmup_day(started_on: str | None, today: date) -> int:
    """Day of the warmup ramp: 1 on `started_on`, 2 the day after, ... (1 when not started)."""
    if started_on is None:
        return 1
    return max(1, (today - date.fromisoformat(started_on)).days + 1)


def warmup_target_today(target: int, ramp_start: int, ramp_increment: int, day: int, room: int) -> int:
    """Warmup emails planned for ramp day `day`: rampStart + rampIncrement * (day - 1), never above
    `target`, nor above `room` (what the mailbox's own daily limit leaves: warmup counts toward it)."""
    return max(0, min(target, ramp_start + ramp_increment * (day - 1), room))


async def warmup_rows(ctx: WorkspaceContext, mailbox_ids: Sequence[str]) -> dict[str, Any]:
    """The warmup rows of the workspace's mailboxes `mailbox_ids`, by mailbox id (none = never set)."""
    if not mailbox_ids:
        return {}
    rows = await ctx.conn.execute(
        scoped(ctx, warmup_mailboxes).select().where(warmup_mailboxes.c.mailbox_id.in_(list(mailbox_ids)))
    )
    return {r.mailbox_id: r for r in rows}


async def save_warmup(ctx: WorkspaceContext, mailbox_id: str, body: WarmupIn, today: date) -> None:
    """Store the fields of `body` that were given. Turning warmup on (again) starts its ramp at day 1 today
    and puts a mailbox removed for bounces back into the pool."""
    given = body.model_fields_set
    table = scoped(ctx, warmup_mailboxes)
    row = (await warmup_rows(ctx, [mailbox_id])).get(mailbox_id)
    values: dict[str, Any] = {
        name: getattr(body, name)
        for name in ("target", "ramp_start", "ramp_increment", "reply_rate")
        if name in given and getattr(body, name) is not None
    }
    if body.enabled is not None:
        values["enabled"] = body.enabled
        was_on = row is not None and bool(row.enabled) and not row.removed
        if body.enabled and not was_on:
            values |= {
                "started_on": today.isoformat(),
                "day": None,
                "next_at": None,
                "removed": False,
                "reason": None,
            }
        if not body.enabled:
            values |= {"reason": None, "next_at": None}
    values["updated_at"] = ctx.now
    if row is None:
        await ctx.conn.execute(table.insert({"mailbox_id": mailbox_id, **values}))
    else:
        await ctx.conn.execute(
            table.update().where(warmup_mailboxes.c.mailbox_id == mailbox_id).values(values)
        )


def warmup_out(row: Any, today: date, room: int) -> Warmup:
    """The mailbox object's `warmup`: the settings, today's plan on the ramp (`room`: what the mailbox's
    daily limit leaves), today's warmup sends, the score and, while it does not send, why."""
    if row is None:
        return Warmup(
            target=DEFAULT_TARGET,
            ramp_start=DEFAULT_RAMP_START,
            ramp_increment=DEFAULT_RAMP_INCREMENT,
            reply_rate=DEFAULT_REPLY_RATE,
        )
    on = bool(row.enabled)
    sent = row.sent_today if row.day == today.isoformat() else 0
    planned = (
        warmup_target_today(
            row.target, row.ramp_start, row.ramp_increment, warmup_day(row.started_on, today), room + sent
        )
        if on and not row.removed
        else 0
    )
    return Warmup.from_row(
        row, enabled=on, sent_today=sent, target_today=planned, reason=row.reason if on else None
    )
