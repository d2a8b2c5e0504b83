"""A batch of tracking hits written down: one `tracking_events` row each and the counts on `sends`.

Bookkeeping across workspaces (the hits of one batch come from any workspace's emails): the send named by a
signed token is looked up by its id; a hit whose send no longer exists (its campaign was deleted) is dropped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, case, text

from outreach_core.kernel.bulk import Values, chunks, update_each
from outreach_core.kernel.context import SystemContext, as_workspace, system_scope, workspace_itself
from outreach_core.kernel.db.tables import sends, tracking_events
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.rollups import count_opens
from outreach_core.tracking.rules import Hit, flag_of, parse_networks

_AGENT_LENGTH = 300
_PER_STATEMENT = 500


@dataclass
class _Counts:
    opens: int = 0
    clicks: int = 0
    flagged_opens: int = 0
    flagged_clicks: int = 0
    first_open: dt.datetime | None = None
    first_click: dt.datetime | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


async def record_hits(
    ctx: SystemContext, hits: Sequence[Hit], *, replay: bool = False, flushed: bool = True
) -> int:
    """Write `hits` (opens and clicks of any workspace's emails) in this transaction: flag each
    (`rules.flag_of`), add one `tracking_events` row each, and add them to their sends' counts (first time and
    count of people's opens and clicks; flagged ones counted apart). Returns how many were recorded.
    `replay`: hits read back from the journal of a process that died; those already recorded (their event
    id exists) are skipped. `flushed=False` (PostgreSQL without a journal): the commit returns once
    PostgreSQL holds it, without waiting for its WAL to reach the disk (`synchronous_commit = off` for this
    transaction only): the hits then survive our process dying, not PostgreSQL itself crashing within the
    next few hundred milliseconds (docs/tracking.md)."""
    if not flushed and ctx.conn.dialect.name == "postgresql":
        await ctx.conn.execute(text("SET LOCAL synchronous_commit = off"))
    if replay:
        hits = await _not_recorded(ctx, hits)
    sent = await _sends(ctx, sorted({h.send_id for h in hits}))
    window = ctx.settings.tracking_scanner_window_s
    networks = parse_networks(ctx.settings.tracking_scanner_networks)
    counts: dict[str, _Counts] = {}
    events: list[dict[str, Any]] = []
    for hit in hits:
        row = sent.get(hit.send_id)
        if row is None:
            continue
        flag = flag_of(hit, row.sent_at or row.created_at, window_s=window, scanner_networks=networks)
        c = counts.setdefault(hit.send_id, _Counts())
        if hit.kind == "open":
            if flag:
                c.flagged_opens += 1
            else:
                c.opens += 1
                c.first_open = hit.at if c.first_open is None else min(c.first_open, hit.at)
        elif flag:
            c.flagged_clicks += 1
        else:
            c.clicks += 1
            c.first_click = hit.at if c.first_click is None else min(c.first_click, hit.at)
        events.append(
            {
                "id": hit.id or new_id("trk"),
                "workspace_id": row.workspace_id,
                "send_id": hit.send_id,
                "kind": hit.kind,
                "at": hit.at,
                "url": hit.url,
                "flag": flag,
                "user_agent": hit.user_agent[:_AGENT_LENGTH] or None,
            }
        )
    for part in chunks(events, _PER_STATEMENT):
        await ctx.conn.execute(*system_scope(tracking_events).insert_many(list(part)))
    rows = [
        {
            "id": send_id,
            "open_count": c.opens,
            "click_count": c.clicks,
            "flagged_opens": c.flagged_opens,
            "flagged_clicks": c.flagged_clicks,
            "opened_at": c.first_open,
            "clicked_at": c.first_click,
        }
        for send_id, c in counts.items()
    ]
    for part in chunks(rows, _PER_STATEMENT):
        await update_each(ctx, system_scope(sends).update(), part, values=_added, reuse="tracking.sends")
    # A send's first open by a person (its `opened_at` was null before this batch) is counted in the
    # analytics rollups in this same transaction (`rollups.count_opens`; docs/analytics.md).
    first_opens: dict[str, list[tuple[str, dt.datetime]]] = {}
    for send_id, c in counts.items():
        row = sent[send_id]
        if c.first_open is not None and row.opened_at is None:
            first_opens.setdefault(row.workspace_id, []).append((send_id, c.first_open))
    for workspace_id, opens in first_opens.items():  # one read and one write per workspace
        await count_opens(as_workspace(ctx, workspace_itself(workspace_id, "tracking")), opens)
    return len(events)


def _added(v: Values) -> dict[str, Any]:
    """Counts added to; a first time kept unless this batch has an earlier one."""
    return {
        "open_count": sends.c.open_count + v["open_count"],
        "click_count": sends.c.click_count + v["click_count"],
        "flagged_opens": sends.c.flagged_opens + v["flagged_opens"],
        "flagged_clicks": sends.c.flagged_clicks + v["flagged_clicks"],
        "opened_at": _earliest(sends.c.opened_at, v["opened_at"]),
        "clicked_at": _earliest(sends.c.clicked_at, v["clicked_at"]),
    }


def _earliest(stored: Any, given: Any) -> Any:
    return case(
        (stored.is_(None), given),
        (given.is_(None), stored),
        (given < stored, given),
        else_=stored,
    )


_SENDS = (
    system_scope(sends)
    .select(sends.c.id, sends.c.workspace_id, sends.c.sent_at, sends.c.created_at, sends.c.opened_at)
    .where(sends.c.id.in_(bindparam("ids", expanding=True)))
)
"""The sends of a batch's hits; built once (each batch built it anew: a tenth of the transaction's CPU)."""


async def _sends(ctx: SystemContext, ids: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for part in chunks(ids, _PER_STATEMENT):
        rows = await ctx.conn.execute(_SENDS, {"ids": list(part)})
        found.update({r.id: r for r in rows})
    return found


async def _not_recorded(ctx: SystemContext, hits: Sequence[Hit]) -> list[Hit]:
    ids = [h.id for h in hits if h.id]
    recorded: set[str] = set()
    for part in chunks(ids, _PER_STATEMENT):
        found = await ctx.conn.execute(
            system_scope(tracking_events)
            .select(tracking_events.c.id)
            .where(tracking_events.c.id.in_(list(part)))
        )
        recorded.update(found.scalars())
    return [h for h in hits if h.id not in recorded]
