"""Pure rules of labels: stored trigger documents and the references they hold."""

from __future__ import annotations

from typing import Any

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
