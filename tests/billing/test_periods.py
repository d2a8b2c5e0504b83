"""Billing periods roll over at `renewsAt` exactly, with the injectable clock: `emailsSentThisPeriod` and the
AI draft count restart and `renewsAt` moves on the instant the period ends, before any `billing` worker
pass; the pass only writes it down (same answer before and after) and ends plans cancelled at the end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select

from outreach_core.billing.plan import set_plan
from outreach_core.billing.rules import add_months
from outreach_core.kernel.bulk import insert_rows
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import ai_drafts, sends, workspaces
from outreach_core.kernel.ids import new_id
from tests.billing.conftest import Served
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.lists.helpers import add_leads
from workers import billing as billing_worker


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _sent(api: httpx.AsyncClient, ws: WorkspaceHandle, at: list[datetime]) -> None:
    """Ledger rows of emails accepted at the given times, as the sender writes them."""
    campaign = (await api.post("/api/v1/campaigns", headers=ws.headers, json={"name": "Periods"})).json()[
        "id"
    ]
    [lead] = await add_leads(ws, f"period-{ws.slug}@example.test")

    async def insert(ctx: WorkspaceContext) -> None:
        rows = []
        for when in at:
            sid = new_id("snd")
            rows.append({"id": sid, "campaign_id": campaign, "campaign_lead_id": None, "lead_id": lead,
                         "step": 0, "message_id": f"<{sid}@mail.test>", "to_email": "p@example.test",
                         "subject": "s",
                         "body_html": "<p>b</p>", "body_text": "b", "attempts": 1, "status": "sent",
                         "created_at": when, "sent_at": when, "error": None})  # fmt: skip
        await insert_rows(ctx, sends, rows)

    await ws.runtime.execute(await ws.principal(), insert)


async def _drafts(ws: WorkspaceHandle, at: list[datetime], own_key: bool = False) -> None:
    async def insert(ctx: WorkspaceContext) -> None:
        table = scoped(ctx, ai_drafts)
        for when in at:
            await ctx.conn.execute(
                table.insert(
                    {"id": new_id("aid"), "kind": "write_sequence", "own_key": own_key, "created_at": when}
                )
            )

    await ws.runtime.execute(await ws.principal(), insert)


async def _stored(ws: WorkspaceHandle) -> Any:
    async with ws.runtime.engine.connect() as conn:
        return (
            await conn.execute(
                select(workspaces.c.plan_renews_at, workspaces.c.plan_status).where(
                    workspaces.c.id == ws.workspace_id
                )
            )
        ).one()


async def test_a_month_rolls_over_at_renews_at_before_any_worker_pass(
    billing_app: Served, api: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    # anchored on the 31st: the next periods start on the last day of shorter months, then the 31st again
    start = datetime(2031, 1, 31, 15, 30, tzinfo=UTC)
    billing_app.clock.set(start)
    ws = await make_workspace(plan=None)
    await billing_app.runtime.system(set_plan, ws.workspace_id, "growth")
    first_end = datetime(2031, 2, 28, 15, 30, tzinfo=UTC)
    await _sent(api, ws, [start + timedelta(days=1), first_end - timedelta(seconds=1)])
    await _drafts(ws, [start + timedelta(days=2), first_end - timedelta(milliseconds=1)])

    async def billing() -> Any:
        return (await api.get("/api/v1/billing", headers=ws.headers)).json()

    billing_app.clock.set(first_end - timedelta(milliseconds=1))
    last_moment = await billing()
    assert last_moment["emailsSentThisPeriod"] == 2 and last_moment["aiDrafts"]["used"] == 2
    assert last_moment["renewsAt"] == _iso(first_end) and last_moment["aiDrafts"]["resetsAt"] == _iso(
        first_end
    )

    billing_app.clock.set(first_end)  # the period's end: the next one has begun, no worker ran
    rolled = await billing()
    assert rolled["emailsSentThisPeriod"] == 0 and rolled["aiDrafts"]["used"] == 0
    second_end = datetime(2031, 3, 31, 15, 30, tzinfo=UTC)
    assert rolled["renewsAt"] == _iso(second_end) and rolled["status"] == "active"
    assert (await _stored(ws)).plan_renews_at == first_end  # not written down yet

    assert await billing_worker.tick(billing_app.runtime) >= 1
    assert (await _stored(ws)).plan_renews_at == second_end
    assert await billing() == rolled  # the pass changed what is stored, not what anyone sees


async def test_a_plan_cancelled_at_the_period_end_stops_there(
    billing_app: Served, api: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    start = datetime(2031, 5, 10, 9, 0, tzinfo=UTC)
    billing_app.clock.set(start)
    ws = await make_workspace(plan=None)
    await billing_app.runtime.system(set_plan, ws.workspace_id, "growth")
    portal = (await api.post("/api/v1/billing/portal", headers=ws.headers)).json()["url"]
    async with httpx.AsyncClient(timeout=10) as browser:
        assert (await browser.post(portal, data={"action": "cancel"})).status_code == 200
    end = add_months(start, 1)
    billing_app.clock.set(end - timedelta(seconds=1))
    assert (await api.get("/api/v1/billing", headers=ws.headers)).json()["status"] == "active"
    billing_app.clock.set(end)
    after = (await api.get("/api/v1/billing", headers=ws.headers)).json()
    assert after["status"] == "canceled" and after["renewsAt"] == _iso(end) and after["cancelAtPeriodEnd"]
    # what needs an active plan is refused at once, before the worker writes the status down
    refused = await api.post("/api/v1/billing/setDedicatedIps", headers=ws.headers, json={"quantity": 1})
    assert refused.status_code == 402
    assert (await _stored(ws)).plan_status == "active"
    await billing_worker.tick(billing_app.runtime)
    assert (await _stored(ws)).plan_status == "canceled"
    assert (await api.get("/api/v1/billing", headers=ws.headers)).json() == after


async def test_a_yearly_plan_renews_yearly_and_its_allowances_monthly(
    billing_app: Served, api: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    start = datetime(2032, 2, 29, 12, 0, tzinfo=UTC)  # a leap day
    billing_app.clock.set(start)
    ws = await make_workspace(plan=None)
    await billing_app.runtime.system(set_plan, ws.workspace_id, "pro", "year")
    await _sent(api, ws, [start + timedelta(days=3)])
    billing_app.clock.set(datetime(2032, 3, 29, 11, 59, tzinfo=UTC))
    got = (await api.get("/api/v1/billing", headers=ws.headers)).json()
    assert got["emailsSentThisPeriod"] == 1 and got["renewsAt"] == _iso(
        datetime(2033, 2, 28, 12, 0, tzinfo=UTC)
    )
    assert got["aiDrafts"]["resetsAt"] == _iso(datetime(2032, 3, 29, 12, 0, tzinfo=UTC))
    billing_app.clock.set(datetime(2032, 3, 29, 12, 0, tzinfo=UTC))
    got = (await api.get("/api/v1/billing", headers=ws.headers)).json()
    assert got["emailsSentThisPeriod"] == 0 and got["renewsAt"] == _iso(
        datetime(2033, 2, 28, 12, 0, tzinfo=UTC)
    )
