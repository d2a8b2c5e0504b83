"""What a thread's label does to its lead, whoever set it: the classifier (rules or AI) while a batch is
recorded (`effects.put_labels`), or a person with `update_thread`. One code path for both (docs/inbox.md,
"Labels"):

- the lead's status follows the label's type (`status_moves`): a positive label (Interested, Meeting booked)
  makes an `active` or `replied` lead `interested`; a negative one (Not interested) makes an `interested`
  lead `replied` again; neutral and warning labels leave the status alone. `won`, `bounced`,
  `unsubscribed` and `suppressed` are never changed by a label;
- the label goes on the lead (`labels/apply.put_label_on`) and its triggers run (suppress, move to a list,
  timers) when the lead did not carry it yet;
- the caller records a `lead.labeled` event for each lead newly labelled (`labeled_data`), with the source
  (`rules`, `ai` or `manual`) and the thread, campaign, step and variant it knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import lead_labels, leads
from outreach_core.labels.apply import put_label_on
from outreach_core.labels.store import LabelRow


def status_moves(label_type: str | None, *, replied: bool = False) -> dict[str, str]:
    """The lead status changes (from -> to) a thread label of `label_type` causes (None: no label); with
    `replied`, also those of the lead's own reply (an `active` lead becomes `replied`)."""
    moves: dict[str, str] = {"active": "replied"} if replied else {}
    if label_type == "positive":
        moves |= {"active": "interested", "replied": "interested"}
    elif label_type == "negative":
        moves["interested"] = "replied"
    return moves


async def move_statuses(ctx: WorkspaceContext, lead_ids: Sequence[str], moves: dict[str, str]) -> None:
    """Apply `status_moves` to the leads, set-based (one statement per target status)."""
    targets: dict[str, list[str]] = {}
    for before, after in moves.items():
        targets.setdefault(after, []).append(before)
    for after, froms in sorted(targets.items()):
        await ctx.conn.execute(
            scoped(ctx, leads)
            .update()
            .where(leads.c.id.in_(list(lead_ids)), leads.c.status.in_(froms))
            .values(status=after, updated_at=ctx.now)
        )


async def label_thread_leads(
    ctx: WorkspaceContext, label: LabelRow, label_type: str, lead_ids: Sequence[str], source: str
) -> set[str]:
    """Put a thread's label on its leads: the status its type calls for, the label with its triggers.
    Returns the leads newly labelled (the caller records their `lead.labeled` events). Once per label and
    transaction (`put_label_on` finds the newly labelled leads by the transaction's time)."""
    await move_statuses(ctx, lead_ids, status_moves(label_type))
    wanted = scoped(ctx, leads).select(leads.c.id).where(leads.c.id.in_(list(lead_ids)))
    if not await put_label_on(ctx, label, wanted, source, record_events=False):
        return set()
    stamped = await ctx.conn.execute(
        scoped(ctx, lead_labels)
        .select(lead_labels.c.lead_id)
        .where(lead_labels.c.label_id == label.id, lead_labels.c.labeled_at == ctx.now)
    )
    return {str(lead_id) for lead_id in stamped.scalars()} & set(lead_ids)


def labeled_data(data: dict[str, Any], label: LabelRow, source: str) -> dict[str, Any]:
    """A `lead.labeled` event's `data`: the lead's event data plus the label and who set it."""
    return {**data, "label": {"id": label.id, "name": label.name}, "source": source}
