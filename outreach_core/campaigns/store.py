"""A campaign's rows as the campaign modules and the sender read and write them: the campaign row, its
sequence (steps and variants, in order), and the trigger-kept lead counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from outreach_core.campaigns.rules import variant_label
from outreach_core.campaigns.schemas import Step, Variant
from outreach_core.kernel.bulk import insert_rows
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import (
    campaign_lead_counters,
    campaign_steps,
    campaign_variants,
    campaigns,
)
from outreach_core.kernel.errors import NotFound


async def campaign_row(ctx: WorkspaceContext, id: str, *, for_update: bool = False) -> Any:
    stmt = scoped(ctx, campaigns).select().where(campaigns.c.id == id)
    if for_update:  # PostgreSQL: concurrent launches and pauses of one campaign queue up (SQLite: no-op)
        stmt = stmt.with_for_update()
    row = (await ctx.conn.execute(stmt)).one_or_none()
    if row is None:
        raise NotFound("campaign", id)
    return row


async def load_steps(ctx: WorkspaceContext, campaign_id: str) -> list[Step]:
    """The sequence of a campaign, steps and variants in order."""
    step_rows = (
        await ctx.conn.execute(
            scoped(ctx, campaign_steps)
            .select()
            .where(campaign_steps.c.campaign_id == campaign_id)
            .order_by(campaign_steps.c.position, campaign_steps.c.id)
        )
    ).all()
    variant_rows = (
        await ctx.conn.execute(
            scoped(ctx, campaign_variants)
            .select()
            .where(campaign_variants.c.campaign_id == campaign_id)
            .order_by(campaign_variants.c.position, campaign_variants.c.id)
        )
    ).all()
    by_step: dict[str, list[Variant]] = defaultdict(list)
    for v in variant_rows:
        by_step[v.step_id].append(Variant.from_row(v, label=variant_label(len(by_step[v.step_id]))))
    return [
        Step.from_row(s, position=position, variants=by_step.get(s.id, []))
        for position, s in enumerate(step_rows)
    ]


async def write_steps(ctx: WorkspaceContext, campaign_id: str, steps: Sequence[Step]) -> None:
    """Insert `steps` (with their variants) as the campaign's sequence, positions in the given order."""
    step_rows, variant_rows = [], []
    for position, step in enumerate(steps):
        step_rows.append(
            {
                "id": step.id,
                "campaign_id": campaign_id,
                "position": position,
                "wait_days": step.wait_days,
                "same_thread": step.same_thread,
                "created_at": ctx.now,
            }
        )
        for v_position, v in enumerate(step.variants):
            variant_rows.append(
                {
                    "id": v.id,
                    "campaign_id": campaign_id,
                    "step_id": step.id,
                    "position": v_position,
                    "subject": v.subject,
                    "body": v.body,
                    "weight": v.weight,
                    "active": v.active,
                    "created_at": ctx.now,
                }
            )
    await insert_rows(ctx, campaign_steps, step_rows)
    await insert_rows(ctx, campaign_variants, variant_rows)


async def touch(ctx: WorkspaceContext, campaign_id: str) -> None:
    await ctx.conn.execute(
        scoped(ctx, campaigns).update().where(campaigns.c.id == campaign_id).values(updated_at=ctx.now)
    )


async def lead_counts(ctx: WorkspaceContext, ids: Sequence[str]) -> dict[str, list[tuple[str, int, int]]]:
    """(status, step, n) rows of each campaign's trigger-kept counters."""
    if not ids:
        return {}
    rows = (
        await ctx.conn.execute(
            scoped(ctx, campaigns)
            .select(
                campaign_lead_counters.c.campaign_id,
                campaign_lead_counters.c.status,
                campaign_lead_counters.c.step,
                campaign_lead_counters.c.n,
            )
            .join(campaign_lead_counters, campaign_lead_counters.c.campaign_id == campaigns.c.id)
            .where(campaigns.c.id.in_(ids), campaign_lead_counters.c.n > 0)
        )
    ).all()
    out: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for r in rows:
        out[r.campaign_id].append((r.status, r.step, int(r.n)))
    return out
