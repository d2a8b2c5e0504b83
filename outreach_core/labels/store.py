"""A workspace's labels as the label operations, endpoints and timers read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import labels, lead_labels
from outreach_core.kernel.errors import NotFound
from outreach_core.labels.schemas import (
    Label,
    LabelTriggers,
)
from outreach_core.targets.groups import with_lead_counts
from outreach_core.targets.label_triggers import without_label


@dataclass(frozen=True)
class LabelRow:
    id: str
    name: str
    triggers: LabelTriggers


async def get_label(ctx: WorkspaceContext, id: str) -> Label:
    """One label with its lead count; 404 when the workspace has no such label."""
    row = (await ctx.conn.execute(labels_with_counts(ctx).where(labels.c.id == id))).one_or_none()
    if row is None:
        raise NotFound("label", id)
    return label_item(row)


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


def label_item(row: Any) -> Label:
    return Label.from_row(row, triggers=LabelTriggers.model_validate(row.triggers))


def labels_with_counts(ctx: WorkspaceContext) -> Select[Any]:
    """Labels with how many leads carry each."""
    columns = (
        labels.c.id,
        labels.c.name,
        labels.c.type,
        labels.c.color,
        labels.c.triggers,
        labels.c.created_at,
    )
    return with_lead_counts(ctx, labels, lead_labels, "label_id", *columns)
