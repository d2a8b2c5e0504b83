"""After the hand-offs: what each gave (`record_sent`), the recipients whose folders are due a look over IMAP
(`tend_due`), what that look found (`record_tended`: where each warmup email landed, the replies drawn at
`replyRate`), warmup emails never found (`missing`), bounces (`record_bounces`, also from the inbox
worker's bounce reports) and the senders' scores. System scope: the pool crosses workspaces."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_

from outreach_core.kernel.bulk import update_each
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import mailboxes, warmup_mailboxes, warmup_messages
from outreach_core.kernel.ports import Delivery, MailServer, Tended
from outreach_core.warmup.pool import WarmupJob
from outreach_core.warmup.rules import BOUNCED, KEEP, MISSING_AFTER, SCORE_DAYS, permanent_refusal, score

TOKENS_PER_LOOK = 200


@dataclass(frozen=True)
class Sent:
    """One warmup hand-off and what it gave."""

    job: WarmupJob
    delivery: Delivery


@dataclass(frozen=True)
class TendJob:
    """A recipient mailbox to look into, and the tokens of the warmup emails sent to it not yet found."""

    mailbox_id: str
    server: MailServer
    password_encrypted: str
    tokens: list[str]
    oauth_encrypted: str | None = None  # an OAuth mailbox's tokens (mailboxes/oauth_tokens.py)


async def record_sent(ctx: SystemContext, results: Sequence[Sent]) -> int:
    """`sent` for an accepted hand-off; `bounced` when the recipient's server refused it for good (the
    recipient leaves the pool); `failed` otherwise (the sending side's problem: nothing to learn)."""
    rows: list[dict[str, Any]] = []
    bounced: dict[str, str] = {}
    for r in results:
        if r.delivery.ok:
            status = "sent"
        elif permanent_refusal(r.delivery.phase, r.delivery.code):
            status = "bounced"
            bounced[r.job.to_mailbox_id] = f"{r.delivery.code} at {r.delivery.phase.upper()}"
        else:
            status = "failed"
        rows.append({"id": r.job.row_id, "status": status})
    await update_each(ctx, system_scope(warmup_messages).update(), rows)
    await _remove(ctx, bounced)
    await refresh_scores(ctx, {r.job.from_mailbox_id for r in results})
    return len(rows)


async def record_bounces(ctx: SystemContext, tokens: Sequence[str], reason: str = "a bounce report") -> int:
    """Warmup emails reported bounced after their hand-off (a bounce report quoting their header, read by
    the inbox worker): `bounced`, and their recipients leave the pool. Returns how many were marked."""
    if not tokens:
        return 0
    rows = (
        await ctx.conn.execute(
            system_scope(warmup_messages)
            .select(warmup_messages.c.id, warmup_messages.c.to_mailbox_id, warmup_messages.c.from_mailbox_id)
            .where(warmup_messages.c.token.in_(list(tokens)), warmup_messages.c.status == "sent")
        )
    ).all()
    await update_each(
        ctx, system_scope(warmup_messages).update(), [{"id": r.id, "status": "bounced"} for r in rows]
    )
    await _remove(ctx, {r.to_mailbox_id: reason for r in rows})
    await refresh_scores(ctx, {r.from_mailbox_id for r in rows})
    return len(rows)


async def _remove(ctx: SystemContext, reasons: dict[str, str]) -> None:
    await update_each(
        ctx,
        system_scope(warmup_mailboxes).update(),
        [
            {
                "mailbox_id": m,
                "removed": True,
                "reason": BOUNCED.format(reason=why)[:300],
                "updated_at": ctx.now,
            }
            for m, why in sorted(reasons.items())
        ],
        key="mailbox_id",
    )


async def tend_due(ctx: SystemContext, *, limit: int = 50) -> list[TendJob]:
    """Recipients with warmup emails sent to them and not found yet (sent at least `warmup_tend_after_s`
    ago), not looked at within `warmup_tend_interval_s`; marks them looked at now. Warmup emails not found
    within `MISSING_AFTER` become `missing` first."""
    now = ctx.now
    settings = ctx.settings
    await _mark_missing(ctx)
    ready = now - dt.timedelta(seconds=settings.warmup_tend_after_s)
    waiting = (
        system_scope(warmup_messages)
        .select(warmup_messages.c.to_mailbox_id)
        .where(
            warmup_messages.c.status == "sent",
            warmup_messages.c.landed.is_(None),
            warmup_messages.c.sent_at <= ready,
        )
        .distinct()
        .subquery()
    )
    looked = now - dt.timedelta(seconds=settings.warmup_tend_interval_s)
    boxes = (
        await ctx.conn.execute(
            system_scope(warmup_messages)
            .select(
                mailboxes.c.id,
                mailboxes.c.imap_host,
                mailboxes.c.imap_port,
                mailboxes.c.imap_security,
                mailboxes.c.imap_user,
                mailboxes.c.password_encrypted,
                mailboxes.c.oauth_encrypted,
            )
            .select_from(
                mailboxes.join(waiting, waiting.c.to_mailbox_id == mailboxes.c.id).outerjoin(
                    warmup_mailboxes, warmup_mailboxes.c.mailbox_id == mailboxes.c.id
                )
            )
            .where(
                mailboxes.c.status == "active",
                or_(warmup_mailboxes.c.tended_at.is_(None), warmup_mailboxes.c.tended_at <= looked),
            )
            .order_by(mailboxes.c.id)
            .limit(limit)
        )
    ).all()
    if not boxes:
        return []
    ids = [b.id for b in boxes]
    tokens: dict[str, list[str]] = {i: [] for i in ids}
    for t in await ctx.conn.execute(
        system_scope(warmup_messages)
        .select(warmup_messages.c.to_mailbox_id, warmup_messages.c.token)
        .where(
            warmup_messages.c.to_mailbox_id.in_(ids),
            warmup_messages.c.status == "sent",
            warmup_messages.c.landed.is_(None),
            warmup_messages.c.sent_at <= ready,
        )
        .order_by(warmup_messages.c.sent_at)
    ):
        if len(tokens[t.to_mailbox_id]) < TOKENS_PER_LOOK:
            tokens[t.to_mailbox_id].append(t.token)
    await update_each(
        ctx,
        system_scope(warmup_mailboxes).update(),
        [{"mailbox_id": i, "tended_at": now} for i in ids],
        key="mailbox_id",
    )
    return [
        TendJob(
            b.id,
            MailServer(b.imap_host, b.imap_port, b.imap_security, b.imap_user),
            b.password_encrypted,
            tokens[b.id],
            b.oauth_encrypted,
        )
        for b in boxes
    ]


async def record_tended(
    ctx: SystemContext, looks: Sequence[tuple[TendJob, Tended]], *, rng: random.Random | None = None
) -> int:
    """Where each warmup email found landed (`inbox` or `spam`); for each new email (not a reply) found,
    whether its recipient answers it, drawn at the recipient's `replyRate`. Returns how many were found."""
    rng = rng or random.Random()
    found = {token: folder for _, tended in looks for token, folder in tended.found.items()}
    if not found:
        return 0
    receivers = [job.mailbox_id for job, tended in looks if tended.found]
    rates = {
        r.mailbox_id: r.reply_rate
        for r in await ctx.conn.execute(
            system_scope(warmup_messages)
            .select(warmup_mailboxes.c.mailbox_id, warmup_mailboxes.c.reply_rate)
            .where(
                warmup_mailboxes.c.mailbox_id.in_(receivers),
                warmup_mailboxes.c.enabled.is_(True),
                warmup_mailboxes.c.removed.is_(False),
            )
        )
    }
    rows = (
        await ctx.conn.execute(
            system_scope(warmup_messages)
            .select(
                warmup_messages.c.id,
                warmup_messages.c.token,
                warmup_messages.c.to_mailbox_id,
                warmup_messages.c.from_mailbox_id,
                warmup_messages.c.reply_to_id,
            )
            .where(
                warmup_messages.c.token.in_(sorted(found)),
                warmup_messages.c.to_mailbox_id.in_(receivers),
                warmup_messages.c.landed.is_(None),
            )
        )
    ).all()
    updates = []
    for r in rows:
        rate = rates.get(r.to_mailbox_id, 0)
        wanted = r.reply_to_id is None and rng.random() * 100 < rate
        updates.append(
            {
                "id": r.id,
                "landed": found[r.token],
                "landed_at": ctx.now,
                "reply": "wanted" if wanted else None,
            }
        )
    await update_each(ctx, system_scope(warmup_messages).update(), updates)
    await refresh_scores(ctx, {r.from_mailbox_id for r in rows})
    return len(updates)


async def _mark_missing(ctx: SystemContext) -> None:
    """Warmup emails not found within `MISSING_AFTER` become `missing`; those older than `KEEP` go."""
    await ctx.conn.execute(
        system_scope(warmup_messages).delete().where(warmup_messages.c.sent_at < ctx.now - KEEP)
    )
    cutoff = ctx.now - MISSING_AFTER
    senders = (
        (
            await ctx.conn.execute(
                system_scope(warmup_messages)
                .select(warmup_messages.c.from_mailbox_id)
                .where(
                    warmup_messages.c.status == "sent",
                    warmup_messages.c.landed.is_(None),
                    warmup_messages.c.sent_at < cutoff,
                )
                .distinct()
            )
        )
        .scalars()
        .all()
    )
    if not senders:
        return
    await ctx.conn.execute(
        system_scope(warmup_messages)
        .update()
        .where(
            warmup_messages.c.status == "sent",
            warmup_messages.c.landed.is_(None),
            warmup_messages.c.sent_at < cutoff,
        )
        .values(landed="missing", landed_at=ctx.now)
    )
    await refresh_scores(ctx, set(senders))


async def refresh_scores(ctx: SystemContext, mailbox_ids: Iterable[str]) -> None:
    """Each mailbox's score from the warmup emails it sent in the last `SCORE_DAYS` days: found in the
    inbox / (found anywhere + missing + bounced); null below `SCORE_MIN_EMAILS` (`rules.score`)."""
    ids = sorted(set(mailbox_ids))
    if not ids:
        return
    since = ctx.now - dt.timedelta(days=SCORE_DAYS)
    counts: dict[str, dict[str, int]] = {i: {} for i in ids}
    outcome = func.coalesce(warmup_messages.c.landed, warmup_messages.c.status)
    for r in await ctx.conn.execute(
        system_scope(warmup_messages)
        .select(warmup_messages.c.from_mailbox_id, outcome.label("outcome"), func.count().label("n"))
        .where(warmup_messages.c.from_mailbox_id.in_(ids), warmup_messages.c.sent_at >= since)
        .group_by(warmup_messages.c.from_mailbox_id, outcome)
    ):
        counts[r.from_mailbox_id][r.outcome] = int(r.n)
    rows = [
        {
            "mailbox_id": i,
            "score": score(c.get("inbox", 0), c.get("spam", 0), c.get("missing", 0) + c.get("bounced", 0)),
        }
        for i, c in counts.items()
    ]
    await update_each(ctx, system_scope(warmup_mailboxes).update(), rows, key="mailbox_id")
