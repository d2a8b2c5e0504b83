"""Warmup problems of a workspace's mailboxes, for the launch checklist and `analytics.mailboxes.problems`
(docs/warmup.md): a score below `LOW_SCORE`, a mailbox removed from the pool for bounces, warmup waiting."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import mailboxes, warmup_mailboxes
from outreach_core.warmup.rules import LOW_SCORE

ProblemKind = Literal["low_score", "removed", "waiting"]


@dataclass(frozen=True)
class WarmupProblem:
    """One mailbox's warmup problem: `low_score` (score below `LOW_SCORE`: warmup emails land in spam),
    `removed` (taken out of the pool: warmup emails to it bounced), `waiting` (warmup on but not sending:
    `message` says why)."""

    mailbox_id: str
    email: str
    kind: ProblemKind
    score: float | None
    message: str


async def warmup_problems(
    ctx: WorkspaceContext, mailbox_ids: Sequence[str] | None = None
) -> list[WarmupProblem]:
    """The warmup problems of the workspace's mailboxes (all of them, or those of `mailbox_ids`), in the
    order of the mailboxes' addresses. Mailboxes with warmup off have none."""
    stmt = (
        scoped(ctx, warmup_mailboxes)
        .select(
            warmup_mailboxes.c.mailbox_id,
            warmup_mailboxes.c.score,
            warmup_mailboxes.c.removed,
            warmup_mailboxes.c.reason,
            mailboxes.c.email,
        )
        .join(mailboxes, mailboxes.c.id == warmup_mailboxes.c.mailbox_id)
        .where(warmup_mailboxes.c.enabled.is_(True))
        .order_by(mailboxes.c.email)
    )
    if mailbox_ids is not None:
        stmt = stmt.where(warmup_mailboxes.c.mailbox_id.in_(list(mailbox_ids)))
    problems: list[WarmupProblem] = []
    for r in await ctx.conn.execute(stmt):
        if r.removed:
            problems.append(WarmupProblem(r.mailbox_id, r.email, "removed", r.score, r.reason or "removed"))
        elif r.score is not None and r.score < LOW_SCORE:
            problems.append(
                WarmupProblem(
                    r.mailbox_id,
                    r.email,
                    "low_score",
                    r.score,
                    f"{r.email}: warmup score {r.score:g} (below {LOW_SCORE:g}): many of its warmup emails "
                    "land in spam. Send less from it, or fix its domain's SPF, DKIM and DMARC.",
                )
            )
        elif r.reason:
            problems.append(WarmupProblem(r.mailbox_id, r.email, "waiting", r.score, r.reason))
    return problems
