"""Labelling records one `lead.labeled` event per newly labelled lead, in the same transaction."""

from __future__ import annotations

from typing import Any

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import outbox
from tests.conftest import MakeWorkspace
from tests.leads.helpers import create


async def _events(ws: Any) -> list[dict[str, Any]]:
    async def read(ctx: WorkspaceContext) -> list[dict[str, Any]]:
        o = scoped(ctx, outbox)
        rows = (
            await ctx.conn.execute(o.select().where(outbox.c.kind == "lead.labeled").order_by(outbox.c.seq))
        ).all()
        return [dict(r._mapping) for r in rows]

    return await ws.runtime.read(await ws.principal(), read)


async def test_labelling_records_an_event_per_new_lead(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    a = await create(http, ws, "a@events.io")
    b = await create(http, ws, "b@events.io")
    label = (
        await http.post("/api/v1/labels", headers=ws.headers, json={"name": "Hot lead", "type": "positive"})
    ).json()
    body = {"target": {"ids": [a["id"], b["id"]]}, "labelId": label["id"]}
    assert (await http.post("/api/v1/leads/labels/add", headers=ws.headers, json=body)).json() == {
        "labeled": 2
    }
    again = await http.post("/api/v1/leads/labels/add", headers=ws.headers, json=body)
    assert again.json() == {"labeled": 0}

    events = await _events(ws)
    assert len(events) == 2 and len({e["id"] for e in events}) == 2
    by_lead = {e["payload"]["data"]["lead"]["id"]: e["payload"] for e in events}
    assert by_lead[a["id"]]["data"] == {
        "lead": {
            "id": a["id"],
            "email": "a@events.io",
            "firstName": None,
            "lastName": None,
            "company": None,
            "status": "active",
        },
        "campaign": None,
        "thread": None,
        "step": None,
        "variant": None,
        "label": {"id": label["id"], "name": "Hot lead"},
        "source": "manual",
    }
    assert all(p["test"] is False and p["workspaceId"] == ws.workspace_id for p in by_lead.values())
    assert all(p["type"] == "lead.labeled" and p["id"].startswith("evt_") for p in by_lead.values())
    assert {e["id"] for e in events} == {p["id"] for p in by_lead.values()}
