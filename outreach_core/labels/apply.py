"""Putting a label on leads and running its triggers for the leads that did not carry it yet, set-based
and in the same transaction: suppress their addresses, move them to a list, and start timers (take the
label off after N days, put another label on after N days) that the `label-timers` worker runs
(`timers.py`). Used by `label_leads` and the timers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Select, String, exists, literal

from outreach_core.events.outbox import record_lead_events
from outreach_core.kernel.bulk import insert_from_select, row_ids
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import label_timers, lead_labels, leads, list_leads
from outreach_core.kernel.db.types import UtcDateTime
from outreach_core.labels.store import LabelRow
from outreach_core.targets.list_members import add_to_list
from outreach_core.targets.suppression import suppress_lead_ids

TIMER_COLUMNS = ["id", "lead_id", "label_id", "action", "target_label_id", "due_at"]


async def put_label_on(
    ctx: WorkspaceContext,
    label: LabelRow,
    lead_ids: Select[Any],
    labeled_by: str = "manual",
    *,
    record_events: bool = True,
) -> int:
    """Put `label` on the workspace's leads in the sub-select `lead_ids` and run its triggers for those that
    did not carry it yet, all set-based. Returns how many leads were newly labelled. `labeled_by` goes into
    their `lead.labeled` events: `manual` (a person or tool), `trigger` (a label's timed trigger); a caller
    that records its own richer event (the inbox: thread, campaign, step) passes `record_events=False`.

    The newly labelled leads are the label's rows stamped with this transaction's time (`ctx.now`); callers
    put one label on at most once per transaction (the timers worker groups its work by label)."""
    ld = scoped(ctx, leads)
    ll = scoped(ctx, lead_labels)
    source = ld.select(
        leads.c.id, literal(label.id, lead_labels.c.label_id.type), literal(ctx.now, UtcDateTime)
    ).where(
        leads.c.id.in_(lead_ids),
        ~exists(
            ll.select(lead_labels.c.lead_id).where(
                lead_labels.c.label_id == label.id, lead_labels.c.lead_id == leads.c.id
            )
        ),
    )
    result = await ctx.conn.execute(
        insert_from_select(ctx, lead_labels, ["lead_id", "label_id", "labeled_at"], source)
    )
    labeled = int(result.rowcount)
    if labeled:
        stamped = (
            scoped(ctx, lead_labels)
            .select(lead_labels.c.lead_id)
            .where(lead_labels.c.label_id == label.id, lead_labels.c.labeled_at == ctx.now)
        )
        if record_events:
            extra = {"label": {"id": label.id, "name": label.name}, "source": labeled_by}
            await record_lead_events(ctx, "lead.labeled", stamped, extra)
        await _run_triggers(ctx, label)
    return labeled


async def _run_triggers(ctx: WorkspaceContext, label: LabelRow) -> None:
    ll = scoped(ctx, lead_labels)
    stamped = (lead_labels.c.label_id == label.id, lead_labels.c.labeled_at == ctx.now)
    new_leads = ll.select(lead_labels.c.lead_id).where(*stamped)
    triggers = label.triggers
    if triggers.suppress:
        await suppress_lead_ids(ctx, new_leads, f"label: {label.name}")
    if triggers.move_to_list_id is not None:
        await add_to_list(ctx, triggers.move_to_list_id, new_leads)
        memberships = scoped(ctx, list_leads)
        await ctx.conn.execute(
            memberships.delete().where(
                list_leads.c.lead_id.in_(new_leads), list_leads.c.list_id != triggers.move_to_list_id
            )
        )
    timers: list[tuple[str, str | None, int]] = []
    if triggers.remove_after_days is not None:
        timers.append(("remove", None, triggers.remove_after_days))
    if triggers.apply_label is not None:
        timers.append(("apply", triggers.apply_label.label_id, triggers.apply_label.after_days))
    for action, target_label_id, days in timers:
        source = ll.select(
            row_ids("tmr", lead_labels.c.lead_id, salted=True),
            lead_labels.c.lead_id,
            literal(label.id, String),
            literal(action, String),
            literal(target_label_id, String),
            literal(ctx.now + timedelta(days=days), UtcDateTime),
        ).where(*stamped)
        await ctx.conn.execute(insert_from_select(ctx, label_timers, TIMER_COLUMNS, source))
