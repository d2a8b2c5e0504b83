"""Labels: create, change, delete, put on and take off leads, and the triggers that need no campaign.

Putting a label on leads runs its triggers for the leads that did not carry it yet, set-based and in the
same transaction: suppress their addresses, move them to a list, and start timers (take the label off
after N days, put another label on after N days) that the `label-timers` worker runs (`labels/timers.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Select, String, exists, func, literal

from outreach_core.bulk import insert_from_select, row_ids
from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import label_timers, labels, lead_labels, leads, list_leads
from outreach_core.db.types import UtcDateTime
from outreach_core.errors import Conflict, InvalidInput, NotFound
from outreach_core.ids import new_id
from outreach_core.labels.rules import without_label
from outreach_core.labels.schemas import (
    MAX_LABELS,
    CreateLabelIn,
    Label,
    Labels,
    LabelTriggers,
    UpdateLabelIn,
)
from outreach_core.leads.schemas import Labeled, LabelTargetIn, Removed
from outreach_core.leads.targets import target_ids
from outreach_core.lists.operations import add_to_list, get_list
from outreach_core.outbox import record_lead_events
from outreach_core.suppressions.operations import suppress_lead_ids
from outreach_core.wire import Ok

TIMER_COLUMNS = ["id", "lead_id", "label_id", "action", "target_label_id", "due_at"]


@dataclass(frozen=True)
class LabelRow:
    id: str
    name: str
    triggers: LabelTriggers


async def list_labels(ctx: WorkspaceContext) -> Labels:
    """List the workspace's labels, oldest first, each with its type (positive, negative, neutral or
    warning: reply sentiment in analytics), color, triggers and how many leads carry it. Use a label's id
    in `label_leads`, `unlabel_leads` and as `labelId` in `list_leads`."""
    rows = (await ctx.conn.execute(_labels_with_counts(ctx).order_by(labels.c.created_at, labels.c.id))).all()
    return Labels(labels=[_item(r) for r in rows])


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
    await _ensure_name_free(ctx, name)
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
    """Change a label's name, type, color or triggers; fields left out (or null) stay as they are, except
    `color: null`, which removes the color. `triggers` replaces all of them (`{}` switches them off); new
    triggers apply to leads labelled from now on (timers already started keep running)."""
    await get_label(ctx, id)
    values: dict[str, Any] = {}
    if body.name is not None:
        values["name"] = body.name.strip()
        await _ensure_name_free(ctx, values["name"], except_id=id)
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
    return await get_label(ctx, id)


async def delete_label(ctx: WorkspaceContext, id: str) -> Ok:
    """Delete a label. It comes off every lead that carries it (the leads stay) and its pending timers are
    dropped. Another label whose trigger applies this one has that trigger switched off."""
    await get_label(ctx, id)
    lb = scoped(ctx, labels)
    for other in await labels_applying(ctx, id):
        changed = without_label(other.triggers.model_dump(mode="json"), id)
        await ctx.conn.execute(lb.update().where(labels.c.id == other.id).values(triggers=changed))
    await ctx.conn.execute(lb.delete().where(labels.c.id == id))
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


# --- used by other domains and the timers ------------------------------------------------------------------


async def get_label(ctx: WorkspaceContext, id: str) -> Label:
    """One label with its lead count; 404 when the workspace has no such label."""
    row = (await ctx.conn.execute(_labels_with_counts(ctx).where(labels.c.id == id))).one_or_none()
    if row is None:
        raise NotFound("label", id)
    return _item(row)


async def label_row(ctx: WorkspaceContext, id: str) -> LabelRow:
    lb = scoped(ctx, labels)
    row = (
        await ctx.conn.execute(
            lb.select(labels.c.id, labels.c.name, labels.c.triggers).where(labels.c.id == id)
        )
    ).one_or_none()
    if row is None:
        raise NotFound("label", id)
    return LabelRow(row.id, row.name, LabelTriggers.model_validate(row.triggers))


async def labels_applying(ctx: WorkspaceContext, label_id: str) -> list[LabelRow]:
    """The other labels whose apply-label trigger puts `label_id` on leads (a workspace has a few hundred
    labels at most, read at once)."""
    lb = scoped(ctx, labels)
    rows = (
        await ctx.conn.execute(
            lb.select(labels.c.id, labels.c.name, labels.c.triggers).order_by(
                labels.c.created_at, labels.c.id
            )
        )
    ).all()
    return [
        LabelRow(r.id, r.name, LabelTriggers.model_validate(r.triggers))
        for r in rows
        if r.id != label_id and without_label(r.triggers, label_id) is not None
    ]


async def put_label_on(
    ctx: WorkspaceContext, label: LabelRow, lead_ids: Select[Any], labeled_by: str = "manual"
) -> int:
    """Put `label` on the workspace's leads in the sub-select `lead_ids` and run its triggers for those that
    did not carry it yet, all set-based. Returns how many leads were newly labelled. `labeled_by` goes into
    their `lead.labeled` events: `manual` (a person or tool), `trigger` (a label's timed trigger).

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
        extra = {"label": {"id": label.id, "name": label.name}, "source": labeled_by}
        await record_lead_events(ctx, "lead.labeled", stamped, extra)
        await _run_triggers(ctx, label)
    return labeled


# --- helpers ---------------------------------------------------------------------------------------------


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


async def _check_triggers(ctx: WorkspaceContext, triggers: LabelTriggers, label_id: str | None) -> None:
    """References must be to this workspace's lists and labels (404 otherwise); a label cannot apply
    itself."""
    if triggers.move_to_list_id is not None:
        await get_list(ctx, triggers.move_to_list_id)
    if triggers.apply_label is not None:
        target = triggers.apply_label.label_id
        if target == label_id:
            raise InvalidInput.field("triggers.applyLabel.labelId", "a label cannot apply itself")
        await label_row(ctx, target)


def _labels_with_counts(ctx: WorkspaceContext) -> Select[Any]:
    """Labels with how many leads carry each: one grouped count over the workspace's labels, joined once."""
    lb = scoped(ctx, labels)
    ll = scoped(ctx, lead_labels)
    counts = (
        ll.select(lead_labels.c.label_id, func.count().label("n"))
        .where(lead_labels.c.label_id.in_(lb.select(labels.c.id)))
        .group_by(lead_labels.c.label_id)
        .subquery()
    )
    return lb.select(
        labels.c.id,
        labels.c.name,
        labels.c.type,
        labels.c.color,
        labels.c.triggers,
        labels.c.created_at,
        func.coalesce(counts.c.n, 0).label("leads"),
    ).outerjoin(counts, counts.c.label_id == labels.c.id)


def _item(row: Any) -> Label:
    return Label(
        id=row.id,
        name=row.name,
        type=row.type,
        color=row.color,
        triggers=LabelTriggers.model_validate(row.triggers),
        leads=row.leads,
        created_at=row.created_at,
    )


async def _ensure_name_free(ctx: WorkspaceContext, name: str, except_id: str | None = None) -> None:
    lb = scoped(ctx, labels)
    stmt = lb.select(labels.c.id).where(labels.c.name == name)
    if except_id is not None:
        stmt = stmt.where(labels.c.id != except_id)
    if (await ctx.conn.execute(stmt)).first() is not None:
        raise Conflict(f"A label named {name!r} exists already.", {"name": name})
