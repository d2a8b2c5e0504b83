"""Label triggers as the other lead domains see them: the stored trigger document, the references it holds
to lists and other labels, and switching off the triggers that point at a list being deleted (the lists
domain does that; labels owns the triggers otherwise)."""

from __future__ import annotations

from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import labels

# Keys of the stored `labels.triggers` document (the wire form of `LabelTriggers`).
MOVE_TO_LIST = "moveToListId"
APPLY_LABEL = "applyLabel"


def without_list(triggers: dict[str, Any], list_id: str) -> dict[str, Any] | None:
    """The triggers with the move-to-list trigger switched off when it points at `list_id`; None when they
    do not refer to that list (nothing to change)."""
    if triggers.get(MOVE_TO_LIST) != list_id:
        return None
    return {**triggers, MOVE_TO_LIST: None}


def without_label(triggers: dict[str, Any], label_id: str) -> dict[str, Any] | None:
    """The triggers with the apply-label trigger switched off when it applies `label_id`; None when they
    do not refer to that label."""
    apply = triggers.get(APPLY_LABEL)
    if not isinstance(apply, dict) or apply.get("labelId") != label_id:
        return None
    return {**triggers, APPLY_LABEL: None}


async def switch_off_list_triggers(ctx: WorkspaceContext, list_id: str) -> None:
    """Labels that move leads to `list_id` (being deleted) stop doing so (a workspace has at most a few
    hundred labels)."""
    lb = scoped(ctx, labels)
    for label_id, triggers in (await ctx.conn.execute(lb.select(labels.c.id, labels.c.triggers))).all():
        changed = without_list(triggers, list_id)
        if changed is not None:
            await ctx.conn.execute(lb.update().where(labels.c.id == label_id).values(triggers=changed))


async def labels_moving_to(ctx: WorkspaceContext, list_id: str) -> list[str]:
    """Names of the labels whose move-to-list trigger points at `list_id`."""
    lb = scoped(ctx, labels)
    rows = (await ctx.conn.execute(lb.select(labels.c.name, labels.c.triggers).order_by(labels.c.name))).all()
    return [name for name, triggers in rows if without_list(triggers, list_id) is not None]
