"""Labels: create, change, delete, put on and take off leads, and the triggers that need no campaign.

Putting a label on leads runs its triggers for the leads that did not carry it yet, set-based and in the
same transaction: suppress their addresses, move them to a list, and start timers (take the label off
after N days, put another label on after N days) that the `label-timers` worker runs (`labels/timers.py`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import label_timers, labels, lead_labels
from outreach_core.kernel.errors import Conflict, InvalidInput
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.rollups import leads_of_threads_labeled, sync_replies
from outreach_core.kernel.wire import Ok
from outreach_core.labels.apply import put_label_on
from outreach_core.labels.schemas import (
    MAX_LABELS,
    CreateLabelIn,
    Label,
    Labels,
    LabelTriggers,
    UpdateLabelIn,
)
from outreach_core.labels.store import get_label, label_item, label_row, labels_applying, labels_with_counts
from outreach_core.targets.groups import ensure_name_free
from outreach_core.targets.label_triggers import without_label
from outreach_core.targets.list_members import list_name
from outreach_core.targets.schemas import Labeled, LabelTargetIn, Removed
from outreach_core.targets.selection import target_ids


async def list_labels(ctx: WorkspaceContext) -> Labels:
    """List the workspace's labels, oldest first, each with its type (positive, negative, neutral or
    warning: reply sentiment in analytics), color, triggers and how many leads carry it. Use a label's id
    in `label_leads`, `unlabel_leads` and as `labelId` in `list_leads`."""
    rows = (await ctx.conn.execute(labels_with_counts(ctx).order_by(labels.c.created_at, labels.c.id))).all()
    return Labels(labels=[label_item(r) for r in rows])


async def create_label(ctx: WorkspaceContext, body: CreateLabelIn) -> Label:
    """Create a label: `name` (unique in the workspace, 1 to 60 characters), `type` (positive, negative,
    neutral or warning; default neutral), optional `color` (`#rrggbb`) and `triggers` that run when the label
    is put on a lead: `suppress` (add the address to the suppression list), `moveToListId` (put the lead on
    that list and take it off all others), `removeAfterDays` (take the label off again after 1 to 365 days),
    `applyLabel` `{labelId, afterDays}` (put another label on after 1 to 365 days)."""
    lb = scoped(ctx, labels)
    total = (await ctx.conn.execute(lb.select(func.count()))).scalar_one()
    if total >= MAX_LABELS:
        raise Conflict(
            f"A workspace can have at most {MAX_LABELS} labels; delete one first.", {"limit": MAX_LABELS}
        )
    name = body.name.strip()
    await ensure_name_free(ctx, labels, "label", name)
    await _check_triggers(ctx, body.triggers, None)
    label_id = new_id("lbl")
    await ctx.conn.execute(
        lb.insert(
            {
                "id": label_id,
                "name": name,
                "type": body.type,
                "color": body.color,
                "triggers": body.triggers.model_dump(mode="json"),
                "created_at": ctx.now,
            }
        )
    )
    return await get_label(ctx, label_id)


async def update_label(ctx: WorkspaceContext, id: str, body: UpdateLabelIn) -> Label:
    """Change a label's name, type, color or triggers; fields left out stay as they are; `color: null`
    removes the color (null is refused for the other fields). `triggers` replaces all of them (`{}`
    switches them off); new triggers apply to leads labelled from now on (timers already started keep
    running)."""
    await get_label(ctx, id)
    values: dict[str, Any] = {}
    if body.name is not None:
        values["name"] = body.name.strip()
        await ensure_name_free(ctx, labels, "label", values["name"], except_id=id)
    if body.type is not None:
        values["type"] = body.type
    if "color" in body.model_fields_set:
        values["color"] = body.color
    if body.triggers is not None:
        await _check_triggers(ctx, body.triggers, id)
        values["triggers"] = body.triggers.model_dump(mode="json")
    if values:
        lb = scoped(ctx, labels)
        await ctx.conn.execute(lb.update().where(labels.c.id == id).values(**values))
        if "type" in values:  # the analytics: replies on threads with this label change sentiment
            await sync_replies(ctx, await leads_of_threads_labeled(ctx, id))
    return await get_label(ctx, id)


async def delete_label(ctx: WorkspaceContext, id: str) -> Ok:
    """Delete a label. It comes off every lead that carries it (the leads stay) and its pending timers are
    dropped. Another label whose trigger applies this one has that trigger switched off."""
    await get_label(ctx, id)
    lb = scoped(ctx, labels)
    for other in await labels_applying(ctx, id):
        changed = without_label(other.triggers.model_dump(mode="json"), id)
        await ctx.conn.execute(lb.update().where(labels.c.id == other.id).values(triggers=changed))
    replied = await leads_of_threads_labeled(ctx, id)
    await ctx.conn.execute(lb.delete().where(labels.c.id == id))
    await sync_replies(ctx, replied)  # the analytics: their replies are unlabeled now
    return Ok()


async def label_leads(ctx: WorkspaceContext, body: LabelTargetIn) -> Labeled:
    """Put a label (`labelId`) on the targeted leads. `target` is exactly one of `{"ids": [...]}`,
    `{"listId": "..."}`, `{"filter": {...list_leads filters...}}` or `{"all": true}`. For the leads that did
    not carry the label yet, the label's triggers run now: suppress their addresses, move them to a list,
    start the timers that take the label off or apply another label later. `labeled` counts those leads
    (leads that already carried it are not counted and nothing runs again for them)."""
    label = await label_row(ctx, body.label_id)
    return Labeled(labeled=await put_label_on(ctx, label, target_ids(ctx, body.target)))


async def unlabel_leads(ctx: WorkspaceContext, body: LabelTargetIn) -> Removed:
    """Take a label (`labelId`) off the targeted leads (`target`: exactly one of `ids`, `listId`, `filter`
    or `all`). Timers the label started for those leads are cancelled; what its triggers already did
    (suppression, list moves) stays. `removed` counts the leads that carried the label."""
    await label_row(ctx, body.label_id)
    lead_ids = target_ids(ctx, body.target)
    ll = scoped(ctx, lead_labels)
    result = await ctx.conn.execute(
        ll.delete().where(lead_labels.c.label_id == body.label_id, lead_labels.c.lead_id.in_(lead_ids))
    )
    timers = scoped(ctx, label_timers)
    await ctx.conn.execute(
        timers.delete().where(label_timers.c.label_id == body.label_id, label_timers.c.lead_id.in_(lead_ids))
    )
    return Removed(removed=int(result.rowcount))


# --- helpers ---------------------------------------------------------------------------------------------


async def _check_triggers(ctx: WorkspaceContext, triggers: LabelTriggers, label_id: str | None) -> None:
    """References must be to this workspace's lists and labels (404 otherwise); a label cannot apply
    itself."""
    if triggers.move_to_list_id is not None:
        await list_name(ctx, triggers.move_to_list_id)
    if triggers.apply_label is not None:
        target = triggers.apply_label.label_id
        if target == label_id:
            raise InvalidInput.field("triggers.applyLabel.labelId", "a label cannot apply itself")
        await label_row(ctx, target)
