"""The monthly AI draft allowance: one draft = one `write_sequence` call or one website draft made with AI.

Drafts made on the service's AI keys count against the plan's `ai_drafts` a month (the same monthly period
as the emails: whole months from the plan's anchor). Drafts made with the workspace's own AI key are
recorded too, but never counted. A draft is recorded in the transaction that saves its result, after the
allowance is checked again there: two drafts racing for the last one left cannot both be saved (the second
is refused, its AI answer discarded).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import func

from outreach_core.billing.rules import allowance_period, in_force
from outreach_core.billing.schemas import AiDrafts
from outreach_core.billing.store import billing_row
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import ai_drafts
from outreach_core.kernel.errors import QuotaExceeded
from outreach_core.kernel.ids import new_id

DraftKind = Literal["write_sequence", "draft_offer"]


async def ai_drafts_status(ctx: WorkspaceContext, row: Any | None = None) -> AiDrafts:
    """The caller's workspace's AI draft allowance now (`row`: its billing columns, read when None)."""
    row = row if row is not None else await billing_row(ctx)
    start, end = allowance_period(ctx.now, row.plan_period_start)
    used = int(
        (
            await ctx.conn.execute(
                scoped(ctx, ai_drafts)
                .select(func.count())
                .where(ai_drafts.c.created_at >= start, ai_drafts.c.own_key.is_(False))
            )
        ).scalar_one()
    )
    own_key = row.own_ai_key is not None
    plan = in_force(row, ctx.now)
    limit = None if own_key or plan is None else plan.ai_drafts
    remaining = None if limit is None else max(0, limit - used)
    return AiDrafts(
        used=used,
        limit=limit,
        remaining=remaining,
        resets_at=end,
        own_key=own_key,
        message=used_up_message(limit, plan.name if plan else "", end) if remaining == 0 else None,
    )


def used_up_message(limit: int | None, plan_name: str, resets_at: datetime) -> str:
    """The spec's `aiDrafts.message`: the allowance is used up, when it resets, and what to do now."""
    return (
        f"All {limit:,} AI drafts of the {plan_name} plan are used this month; the count resets on "
        f"{resets_at:%Y-%m-%d %H:%M} UTC. Add your own AI key (PUT /api/v1/settings/ai-key, tool "
        "set_ai_key), whose drafts are not counted, or move to a larger plan (POST /api/v1/billing/checkout, "
        "tool start_checkout)."
    )


async def ensure_ai_draft_left(ctx: WorkspaceContext, *, own_key: bool) -> None:
    """Refuse with 429 `quota_exceeded` (the spec's message, `aiDrafts` in details, `Retry-After` until the
    reset) when a draft on the service's AI keys would pass the plan's monthly allowance."""
    if own_key:
        return
    status = await ai_drafts_status(ctx)
    if status.remaining == 0:
        seconds = max(1, int((status.resets_at - ctx.now).total_seconds()))
        raise QuotaExceeded(
            status.message or "The AI draft allowance is used up.",
            {"aiDrafts": status.model_dump(mode="json", by_alias=True)},
            retry_after_s=seconds,
        )


async def record_ai_draft(ctx: WorkspaceContext, kind: DraftKind, *, own_key: bool) -> None:
    """Count one AI draft (checked against the allowance first, in this transaction)."""
    await ensure_ai_draft_left(ctx, own_key=own_key)
    await ctx.conn.execute(
        scoped(ctx, ai_drafts).insert(
            {"id": new_id("aid"), "kind": kind, "own_key": own_key, "created_at": ctx.now}
        )
    )
