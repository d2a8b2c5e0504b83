"""The warmup pool's daily plan and its claim (one transaction across workspaces, system scope).

`plan_and_claim` reads every mailbox with warmup on (one indexed statement), plans the day of each whose
local day changed (today's target on its own ramp, the sends of the day counted from 0, a first send time),
says why a mailbox waits (a pool of one, a mailbox not active, its daily limit used up), and claims the
warmup emails due now: a due reply first (a received warmup email drawn at `replyRate`), else a new email
to another mailbox of the pool picked at random. Each claimed email is written as `sending` with its token
and Message-ID before the hand-off, and counted at once in the warmup plan and in the mailbox's own daily
sends (`mailboxes.sent_count`, which the campaign sender reads). Never anything of one workspace is written
into another's rows; the partner's address only travels in the job.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import case

from outreach_core.kernel.bulk import update_each
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import mailboxes, warmup_mailboxes, warmup_messages
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.ports import MailServer
from outreach_core.mail.message import reply_subject
from outreach_core.mailboxes.rules import effective_limit, ramp_day, sent_today
from outreach_core.mailboxes.warmup_settings import warmup_day, warmup_target_today
from outreach_core.warmup import corpus
from outreach_core.warmup.message import WarmupEmail, new_message_id
from outreach_core.warmup.rules import (
    FULL_TODAY,
    NOT_ACTIVE,
    POOL_OF_ONE,
    local_today,
    new_token,
    next_send_at,
    tomorrow_start,
)


@dataclass(frozen=True)
class WarmupJob:
    """One claimed warmup email: its row, the sending mailbox's server and stored password, and the email."""

    row_id: str
    from_mailbox_id: str
    to_mailbox_id: str
    server: MailServer
    password_encrypted: str
    email: WarmupEmail
    oauth_encrypted: str | None = None  # an OAuth mailbox's tokens (mailboxes/oauth_tokens.py)


@dataclass(frozen=True)
class Claimed:
    jobs: list[WarmupJob]
    planned: int  # warmup rows whose day, plan or reason changed


_COLUMNS = (
    warmup_mailboxes.c.mailbox_id,
    warmup_mailboxes.c.removed,
    warmup_mailboxes.c.target,
    warmup_mailboxes.c.ramp_start,
    warmup_mailboxes.c.ramp_increment,
    warmup_mailboxes.c.started_on,
    warmup_mailboxes.c.day,
    warmup_mailboxes.c.target_today,
    warmup_mailboxes.c.sent_today,
    warmup_mailboxes.c.next_at,
    warmup_mailboxes.c.reason,
    mailboxes.c.email,
    mailboxes.c.display_name,
    mailboxes.c.status,
    mailboxes.c.timezone,
    mailboxes.c.daily_limit,
    mailboxes.c.ramp_enabled,
    mailboxes.c.ramp_start.label("mb_ramp_start"),
    mailboxes.c.ramp_increment.label("mb_ramp_increment"),
    mailboxes.c.ramp_started_on,
    mailboxes.c.sent_day,
    mailboxes.c.sent_count,
    mailboxes.c.smtp_host,
    mailboxes.c.smtp_port,
    mailboxes.c.smtp_security,
    mailboxes.c.smtp_user,
    mailboxes.c.password_encrypted,
    mailboxes.c.oauth_encrypted,
)


def _room(r: Any, today: dt.date) -> int:
    """What the mailbox's own daily limit leaves today (warmup counts toward it)."""
    day = ramp_day(r.ramp_started_on, today)
    limit = effective_limit(r.daily_limit, bool(r.ramp_enabled), r.mb_ramp_start, r.mb_ramp_increment, day)
    return max(0, limit - sent_today(r.sent_day, r.sent_count, today))


async def plan_and_claim(
    ctx: SystemContext, *, rng: random.Random | None = None, limit: int | None = None
) -> Claimed:
    """Plan the pool's day and claim the warmup emails due now (see the module docstring)."""
    rng = rng or random.Random()
    limit = limit or ctx.settings.warmup_batch
    now = ctx.now
    stmt = (
        system_scope(warmup_mailboxes)
        .select(*_COLUMNS)
        .select_from(warmup_mailboxes.join(mailboxes, mailboxes.c.id == warmup_mailboxes.c.mailbox_id))
        .where(warmup_mailboxes.c.enabled.is_(True))
        .order_by(warmup_mailboxes.c.mailbox_id)
    )
    if ctx.conn.dialect.name == "postgresql":  # several workers share the pool: each claims other rows
        stmt = stmt.with_for_update(skip_locked=True, of=[warmup_mailboxes])
    # plain objects: attribute reads of SQLAlchemy rows cost microseconds each, read thousands of times here
    rows = [SimpleNamespace(**r._mapping) for r in await ctx.conn.execute(stmt)]
    pool = [r for r in rows if not r.removed and r.status == "active"]
    changes: list[dict[str, Any]] = []
    state: dict[str, dict[str, Any]] = {}
    for r in rows:
        today = local_today(now, r.timezone)
        room = _room(r, today)
        fresh = r.day != today.isoformat()
        sent = 0 if fresh else r.sent_today
        day = warmup_day(r.started_on, today)
        target = warmup_target_today(r.target, r.ramp_start, r.ramp_increment, day, room + sent)
        wanted = warmup_target_today(r.target, r.ramp_start, r.ramp_increment, day, r.target)
        reason = r.reason
        if not r.removed:
            reason = NOT_ACTIVE if r.status != "active" else POOL_OF_ONE if len(pool) < 2 else None
            if reason is None and room <= 0 and sent < wanted:
                reason = FULL_TODAY
        next_at = r.next_at
        if fresh:
            next_at = now + dt.timedelta(seconds=rng.uniform(0, 600))
        values = {
            "mailbox_id": r.mailbox_id,
            "day": today.isoformat(),
            "target_today": target,
            "sent_today": sent,
            "next_at": next_at,
            "reason": reason,
        }
        state[r.mailbox_id] = values | {"room": room, "today": today}
        if (r.day, r.target_today, r.sent_today, r.next_at, r.reason) != (
            values["day"],
            target,
            sent,
            next_at,
            reason,
        ):
            changes.append(values)
    jobs: list[WarmupJob] = []
    if len(pool) >= 2:
        jobs = await _claim(ctx, pool, state, rng, limit)
        by_id = {p.mailbox_id: p for p in pool}
        for job in jobs:
            s = state[job.from_mailbox_id]
            r = by_id[job.from_mailbox_id]
            left = max(0, s["target_today"] - s["sent_today"])
            s["next_at"] = (
                next_send_at(now, r.timezone, left, rng, ctx.settings.warmup_min_gap_s)
                if left > 0
                else tomorrow_start(now, r.timezone)
            )
        claimed = {j.from_mailbox_id for j in jobs}
        changes = [c for c in changes if c["mailbox_id"] not in claimed] + [
            {k: state[m][k] for k in ("mailbox_id", "day", "target_today", "sent_today", "next_at", "reason")}
            for m in sorted(claimed)
        ]
    await update_each(ctx, system_scope(warmup_mailboxes).update(), changes, key="mailbox_id")
    return Claimed(jobs, len(changes))


async def _claim(
    ctx: SystemContext,
    pool: list[Any],
    state: dict[str, dict[str, Any]],
    rng: random.Random,
    limit: int,
) -> list[WarmupJob]:
    now = ctx.now
    due = [
        r
        for r in pool
        if state[r.mailbox_id]["reason"] is None
        and state[r.mailbox_id]["sent_today"] < state[r.mailbox_id]["target_today"]
        and state[r.mailbox_id]["room"] > 0
        and (state[r.mailbox_id]["next_at"] is None or state[r.mailbox_id]["next_at"] <= now)
    ][:limit]
    if not due:
        return []
    by_id = {r.mailbox_id: r for r in pool}
    replies = await _replies_due(ctx, [r.mailbox_id for r in due])
    new_rows: list[dict[str, Any]] = []
    answered: list[dict[str, Any]] = []
    jobs: list[WarmupJob] = []
    for r in due:
        original = replies.get(r.mailbox_id)
        if original is not None and original.from_mailbox_id in by_id:
            partner = by_id[original.from_mailbox_id]
            subject = reply_subject(original.subject)
            text = corpus.compose_reply(rng, r.display_name)
            in_reply_to: str | None = original.message_id
            answered.append({"id": original.id, "reply": "sent"})
        else:
            partner = _partner(pool, r, rng)
            if partner is None:
                continue
            subject, text = corpus.compose(rng, r.display_name)
            in_reply_to = None
            original = None
        token = new_token()
        email = WarmupEmail(
            from_email=r.email,
            from_name=r.display_name,
            to_email=partner.email,
            subject=subject[:200],
            text=text,
            message_id=new_message_id(r.email),
            token=token,
            date=now,
            in_reply_to=in_reply_to,
        )
        row_id = new_id("wmsg")
        new_rows.append(
            {
                "id": row_id,
                "token": token,
                "from_mailbox_id": r.mailbox_id,
                "to_mailbox_id": partner.mailbox_id,
                "reply_to_id": original.id if original is not None else None,
                "message_id": email.message_id,
                "subject": email.subject,
                "status": "sending",
                "sent_at": now,
                "landed": None,
                "landed_at": None,
                "reply": None,
            }
        )
        server = MailServer(r.smtp_host, r.smtp_port, r.smtp_security, r.smtp_user)
        jobs.append(
            WarmupJob(
                row_id,
                r.mailbox_id,
                partner.mailbox_id,
                server,
                r.password_encrypted,
                email,
                r.oauth_encrypted,
            )
        )
        state[r.mailbox_id]["sent_today"] += 1
        state[r.mailbox_id]["room"] -= 1
    if new_rows:
        await ctx.conn.execute(*system_scope(warmup_messages).insert_many(new_rows))
    await update_each(ctx, system_scope(warmup_messages).update(), answered)
    await _count_in_daily_sends(ctx, {j.from_mailbox_id: state[j.from_mailbox_id]["today"] for j in jobs})
    return jobs


def _partner(pool: list[Any], r: Any, rng: random.Random) -> Any:
    """Another mailbox of the pool at random (never `r` itself, nor a mailbox of the same address)."""
    for _ in range(8):
        p = pool[rng.randrange(len(pool))]
        if p.mailbox_id != r.mailbox_id and p.email != r.email:
            return p
    others = [p for p in pool if p.mailbox_id != r.mailbox_id and p.email != r.email]
    return rng.choice(others) if others else None


async def _replies_due(ctx: SystemContext, mailbox_ids: list[str]) -> dict[str, Any]:
    """For each mailbox, one received warmup email it is to answer (the oldest), if any."""
    rows = await ctx.conn.execute(
        system_scope(warmup_messages)
        .select()
        .where(warmup_messages.c.reply == "wanted", warmup_messages.c.to_mailbox_id.in_(mailbox_ids))
        .order_by(warmup_messages.c.sent_at)
    )
    found: dict[str, Any] = {}
    for row in rows:
        found.setdefault(row.to_mailbox_id, row)
    return found


async def _count_in_daily_sends(ctx: SystemContext, days: dict[str, dt.date]) -> None:
    """Each claimed warmup email counts as one of the mailbox's sends today (`sent_day`, `sent_count`, the
    counter the campaign sender reads), in SQL so that a concurrent sender's count is never lost."""
    by_day: dict[str, list[str]] = defaultdict(list)
    for mailbox_id, day in days.items():
        by_day[day.isoformat()].append(mailbox_id)
    for iso, ids in sorted(by_day.items()):
        await ctx.conn.execute(
            system_scope(mailboxes)
            .update()
            .where(mailboxes.c.id.in_(ids))
            .values(
                sent_count=case((mailboxes.c.sent_day == iso, mailboxes.c.sent_count + 1), else_=1),
                sent_day=iso,
            )
        )
