"""Label timers: the "take the label off after N days" and "apply another label after N days" triggers.

`put_label_on` writes a `label_timers` row per newly labelled lead and timed trigger. The `label-timers`
worker finds the workspaces with due timers (`due_timer_workspaces`, the only cross-workspace read here),
then runs `run_due_label_timers` once per workspace, in that workspace's own scoped transaction, acting as
the workspace itself (`timer_principal`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import exists

from outreach_core.kernel.context import (
    Principal,
    SystemContext,
    WorkspaceContext,
    scoped,
    system_scope,
    workspace_itself,
)
from outreach_core.kernel.db.tables import label_timers, lead_labels
from outreach_core.labels.apply import put_label_on
from outreach_core.labels.store import label_row

TIMER_BATCH = 500
"""Timers handled per workspace transaction."""


def timer_principal(workspace_id: str) -> Principal:
    """The workspace acting on its own behalf (no person): what label timers run as."""
    return workspace_itself(workspace_id, "label-timers")


async def due_timer_workspaces(ctx: SystemContext, limit: int) -> list[str]:
    """Up to `limit` workspaces that have label timers due now."""
    t = system_scope(label_timers)
    rows = await ctx.conn.execute(
        t.select(label_timers.c.workspace_id).where(label_timers.c.due_at <= ctx.now).distinct().limit(limit)
    )
    return [str(ws) for ws in rows.scalars().all()]


async def run_due_label_timers(ctx: WorkspaceContext, batch: int = TIMER_BATCH) -> int:
    """Run up to `batch` of this workspace's due timers, earliest first; returns how many ran.

    Timers are claimed with `FOR UPDATE SKIP LOCKED` on PostgreSQL, so several workers never run the same
    timer. Removals go first (one DELETE), then each label to apply is put on its leads in one set-based
    call that also runs that label's own triggers; the claimed timers are deleted last. A label taken off by
    its timer keeps its other timers (they were set up together); `unlabel_leads` is what cancels them.
    """
    t = scoped(ctx, label_timers)
    claimed: list[str] = list(
        (
            await ctx.conn.execute(
                t.select(label_timers.c.id)
                .where(label_timers.c.due_at <= ctx.now)
                .order_by(label_timers.c.due_at, label_timers.c.id)
                .limit(batch)
                .with_for_update(skip_locked=True)
            )
        )
        .scalars()
        .all()
    )
    if not claimed:
        return 0
    mine = label_timers.c.id.in_(claimed)

    ll = scoped(ctx, lead_labels)
    removal = t.select(label_timers.c.id).where(
        mine,
        label_timers.c.action == "remove",
        label_timers.c.lead_id == lead_labels.c.lead_id,
        label_timers.c.label_id == lead_labels.c.label_id,
    )
    await ctx.conn.execute(ll.delete().where(exists(removal)))

    to_apply: list[Any] = list(
        (
            await ctx.conn.execute(
                t.select(label_timers.c.target_label_id)
                .where(mine, label_timers.c.action == "apply")
                .distinct()
                .order_by(label_timers.c.target_label_id)
            )
        )
        .scalars()
        .all()
    )
    for target_label_id in to_apply:
        label = await label_row(ctx, str(target_label_id))
        leads_due = t.select(label_timers.c.lead_id).where(
            mine, label_timers.c.action == "apply", label_timers.c.target_label_id == target_label_id
        )
        await put_label_on(ctx, label, leads_due, "trigger")

    await ctx.conn.execute(t.delete().where(mine))
    return len(claimed)
