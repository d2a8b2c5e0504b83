"""the built-in labels (Interested, Meeting booked, ... Bounce) in every workspace that existed before

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import JsonType, UtcDateTime
from outreach_core.kernel.ids import new_id

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# A copy, not an import of outreach_core.labels.builtin: a migration keeps doing what it did when written.
BUILTIN = (
    ("interested", "Interested", "positive"),
    ("meeting_booked", "Meeting booked", "positive"),
    ("not_interested", "Not interested", "negative"),
    ("wrong_person", "Wrong person", "neutral"),
    ("out_of_office", "Out of office", "neutral"),
    ("auto_reply", "Auto-reply", "neutral"),
    ("unsubscribe_request", "Unsubscribe request", "warning"),
    ("bounce", "Bounce", "warning"),
)
TRIGGERS = {"suppress": False, "moveToListId": None, "removeAfterDays": None, "applyLabel": None}

labels = sa.table(
    "labels",
    sa.column("id", sa.String),
    sa.column("workspace_id", sa.String),
    sa.column("name", sa.String),
    sa.column("type", sa.String),
    sa.column("color", sa.String),
    sa.column("triggers", JsonType()),
    sa.column("builtin", sa.String),
    sa.column("created_at", UtcDateTime()),
)
workspaces = sa.table("workspaces", sa.column("id", sa.String))


def upgrade() -> None:
    bind = op.get_bind()
    now = datetime.now(UTC)
    existing = bind.execute(
        sa.select(labels.c.workspace_id, labels.c.id, labels.c.name, labels.c.builtin)
    ).all()
    by_ws: dict[str, list[Any]] = {}
    for row in existing:
        by_ws.setdefault(row.workspace_id, []).append(row)
    for (ws_id,) in bind.execute(sa.select(workspaces.c.id)).all():
        rows = by_ws.get(ws_id, [])
        have = {r.builtin for r in rows if r.builtin}
        by_name = {r.name.lower(): r.id for r in rows if not r.builtin}
        for key, name, kind in BUILTIN:
            if key in have:
                continue
            if name.lower() in by_name:
                bind.execute(labels.update().where(labels.c.id == by_name[name.lower()]).values(builtin=key))
                continue
            bind.execute(
                labels.insert().values(
                    id=new_id("lbl"),
                    workspace_id=ws_id,
                    name=name,
                    type=kind,
                    color=None,
                    triggers=TRIGGERS,
                    builtin=key,
                    created_at=now,
                )
            )


def downgrade() -> None:
    pass  # the labels stay (leads may carry them); 0011's downgrade drops the column that marks them
