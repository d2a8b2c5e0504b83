"""Events are recorded in the same transaction as the change that causes them."""

from __future__ import annotations

from typing import Any

import pytest

from outreach_core.events.outbox import record_event
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import outbox, workspaces
from tests.conftest import MakeWorkspace


class Boom(Exception):
    pass


async def _events(ws: Any) -> list[dict[str, Any]]:
    async def read(ctx: WorkspaceContext) -> list[dict[str, Any]]:
        o = scoped(ctx, outbox)
        return [dict(r._mapping) for r in (await ctx.conn.execute(o.select().order_by(o.c.seq))).all()]

    return await ws.runtime.read(await ws.principal(), read)


async def test_event_commits_with_the_change(make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()

    async def rename_and_record(ctx: WorkspaceContext) -> str:
        await ctx.conn.execute(scoped(ctx, workspaces).update().values(name="Renamed"))
        return await record_event(ctx, "lead.won", {"leadId": "lead_x", "value": 10})

    event_id = await ws.runtime.execute(await ws.principal(), rename_and_record)
    events = await _events(ws)
    assert [e["id"] for e in events] == [event_id]
    assert events[0]["kind"] == "lead.won" and events[0]["dispatched_at"] is None
    payload = events[0]["payload"]
    assert payload["type"] == "lead.won" and payload["data"] == {"leadId": "lead_x", "value": 10}


async def test_event_is_rolled_back_with_a_failed_change(make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()

    async def record_then_fail(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(scoped(ctx, workspaces).update().values(name="Never"))
        await record_event(ctx, "campaign.paused", {"campaignId": "cmp_x"})
        raise Boom

    with pytest.raises(Boom):
        await ws.runtime.execute(await ws.principal(), record_then_fail)
    assert await _events(ws) == []
    me = await ws.runtime.read(await ws.principal(), _name)
    assert me != "Never"


async def _name(ctx: WorkspaceContext) -> str:
    return str((await ctx.conn.execute(scoped(ctx, workspaces).select(workspaces.c.name))).scalar_one())


async def test_events_of_other_workspaces_are_invisible(make_workspace: MakeWorkspace) -> None:
    mine, theirs = await make_workspace(), await make_workspace()

    async def record(ctx: WorkspaceContext) -> str:
        return await record_event(ctx, "lead.bounced", {"leadId": "lead_y"})

    await mine.runtime.execute(await theirs.principal(), record)
    assert await _events(mine) == []
    assert len(await _events(theirs)) == 1
