"""The built-in labels every workspace has (issue 17): what the inbox classifier puts on threads and leads.

They are ordinary labels (renamed, recoloured, given triggers like any other) marked with `labels.builtin`,
by which the inbox finds them even after a rename. Created with the workspace (`workspace/setup.py`) and, for
workspaces that existed before, by migration 0012. Deleting one is allowed: the inbox then simply labels
nothing for that kind.
"""

from __future__ import annotations

from typing import Literal

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import labels
from outreach_core.kernel.ids import new_id
from outreach_core.labels.schemas import LabelTriggers

BuiltinKey = Literal[
    "interested", "meeting_booked", "not_interested", "wrong_person",
    "out_of_office", "auto_reply", "unsubscribe_request", "bounce",
]  # fmt: skip

BUILTIN_LABELS: tuple[tuple[BuiltinKey, str, str], ...] = (
    ("interested", "Interested", "positive"),
    ("meeting_booked", "Meeting booked", "positive"),
    ("not_interested", "Not interested", "negative"),
    ("wrong_person", "Wrong person", "neutral"),
    ("out_of_office", "Out of office", "neutral"),
    ("auto_reply", "Auto-reply", "neutral"),
    ("unsubscribe_request", "Unsubscribe request", "warning"),
    ("bounce", "Bounce", "warning"),
)
"""(builtin key, name, type) in the order they are created."""
BUILTIN_NAMES = frozenset(name for _, name, _ in BUILTIN_LABELS)


async def ensure_builtin_labels(ctx: WorkspaceContext) -> int:
    """Create the built-in labels the workspace lacks; returns how many were created. A label the workspace
    already has under a built-in name (any case) becomes that built-in label instead of a duplicate."""
    lb = scoped(ctx, labels)
    rows = (await ctx.conn.execute(lb.select(labels.c.id, labels.c.name, labels.c.builtin))).all()
    have = {r.builtin for r in rows if r.builtin}
    by_name = {r.name.lower(): r for r in rows if not r.builtin}
    created = 0
    for key, name, kind in BUILTIN_LABELS:
        if key in have:
            continue
        same = by_name.get(name.lower())
        if same is not None:
            await ctx.conn.execute(lb.update().where(labels.c.id == same.id).values(builtin=key))
            continue
        await ctx.conn.execute(
            lb.insert(
                {
                    "id": new_id("lbl"),
                    "name": name,
                    "type": kind,
                    "color": None,
                    "triggers": LabelTriggers().model_dump(mode="json"),
                    "builtin": key,
                    "created_at": ctx.now,
                }
            )
        )
        created += 1
    return created


async def builtin_label_ids(ctx: WorkspaceContext) -> dict[str, str]:
    """The workspace's built-in labels: builtin key -> label id."""
    rows = await ctx.conn.execute(
        scoped(ctx, labels).select(labels.c.builtin, labels.c.id).where(labels.c.builtin.is_not(None))
    )
    return {str(r.builtin): str(r.id) for r in rows}
