"""Plan limits at their exact boundaries, as a user meets them: contacts at lead create and import, AI
drafts at every draft (the spec's message, no draft, nothing saved), and drafts with the workspace's own
key never counted. (Mailbox slots at create and import: tests/mailboxes/test_mailboxes_api.py; emails a
month in the sender: tests/sending/test_plan_period.py.)"""

from __future__ import annotations

from typing import Any

import httpx

from outreach_core.billing.rules import PLANS
from outreach_core.kernel.bulk import insert_rows
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import ai_drafts, leads
from outreach_core.kernel.ids import new_id
from outreach_core.targets.rules import search_text, sort_name
from tests.billing.conftest import Served
from tests.billing.servers import FakeAi
from tests.billing.test_writing import campaign_with_profile, sequence_answer
from tests.conftest import MakeWorkspace, WorkspaceHandle
from workers import imports as import_worker


async def _fill_leads(ws: WorkspaceHandle, count: int) -> None:
    """`count` leads inserted in one statement (the trigger-kept counters see them as any insert)."""
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    rows = []
    for n in range(count):
        email = f"fill{n}@{ws.slug}.example"
        rows.append({"id": new_id("lead"), "email": email, "domain": f"{ws.slug}.example", "custom": {},
                     "sort_name": sort_name(None, None), "search_text": search_text(email, None, None, None),
                     "status": "active", "created_at": now})  # fmt: skip

    async def insert(ctx: WorkspaceContext) -> None:
        await insert_rows(ctx, leads, rows)

    await ws.runtime.execute(await ws.principal(), insert)


async def test_contacts_limit_at_create_and_import(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan="starter")
    limit = PLANS["starter"].contacts
    await _fill_leads(ws, limit - 3)
    # an import of 4 new addresses: 2 fit (the last two places are taken one by one below), 2 do not
    created = await api.post("/api/v1/leads", headers=ws.headers, json={"email": f"one@{ws.slug}.test"})
    assert created.status_code == 200
    rows = [{"email": f"imp{n}@{ws.slug}.test"} for n in range(4)]
    started = await api.post("/api/v1/leads/import", headers=ws.headers, json={"rows": rows, "final": True})
    assert started.status_code == 200, started.text
    while await import_worker.tick(ws.runtime):
        pass
    done = (await api.get(f"/api/v1/leads/imports/{started.json()['id']}", headers=ws.headers)).json()
    assert (done["created"], done["overLimit"]) == (2, 2)
    assert (await api.get("/api/v1/leads/stats", headers=ws.headers)).json()["total"] == limit
    refused = await api.post("/api/v1/leads", headers=ws.headers, json={"email": f"two@{ws.slug}.test"})
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "quota_exceeded"
    assert refused.json()["error"]["details"] == {"limit": limit, "current": limit, "adding": 1}
    assert "Retry-After" not in refused.headers  # only a change frees a contact place, not time


async def _used(ws: WorkspaceHandle, count: int, *, own_key: bool = False) -> None:
    async def insert(ctx: WorkspaceContext) -> None:
        table = scoped(ctx, ai_drafts)
        for _ in range(count):
            await ctx.conn.execute(
                table.insert(
                    {"id": new_id("aid"), "kind": "write_sequence", "own_key": own_key, "created_at": ctx.now}
                )
            )

    await ws.runtime.execute(await ws.principal(), insert)


async def test_ai_drafts_at_the_boundary(
    billing_app: Served, api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace(plan="starter")
    limit = PLANS["starter"].ai_drafts
    await _used(ws, limit - 1)
    await _used(ws, 5, own_key=True)  # drafts with the workspace's own key never count
    campaign = await campaign_with_profile(api, ws)
    ai_server.reset(sequence_answer(2))
    last = await api.post(
        f"/api/v1/campaigns/{campaign}/write", headers=ws.headers, json={"mode": "sequence", "steps": 2}
    )
    assert last.status_code == 200, last.text
    assert len(last.json()["created"]) == 2
    drafts = (await api.get("/api/v1/billing", headers=ws.headers)).json()["aiDrafts"]
    assert (drafts["used"], drafts["remaining"]) == (limit, 0)
    assert (
        drafts["message"] is not None and "All 50 AI drafts of the Starter plan are used" in drafts["message"]
    )

    before = (await api.get(f"/api/v1/campaigns/{campaign}", headers=ws.headers)).json()
    ai_server.reset(sequence_answer(2))
    refused = await api.post(
        f"/api/v1/campaigns/{campaign}/write", headers=ws.headers, json={"mode": "sequence", "steps": 2}
    )
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "quota_exceeded"
    assert refused.json()["error"]["message"] == drafts["message"]
    assert refused.json()["error"]["details"]["aiDrafts"]["remaining"] == 0
    assert int(refused.headers["Retry-After"]) > 0
    assert ai_server.requests == []  # no draft: the AI was never asked
    assert (await api.get(f"/api/v1/campaigns/{campaign}", headers=ws.headers)).json()["steps"] == before[
        "steps"
    ]


async def test_the_workspaces_own_key_writes_past_the_allowance_and_is_not_counted(
    billing_app: Served, api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace(plan="starter")
    await _used(ws, PLANS["starter"].ai_drafts)
    campaign = await campaign_with_profile(api, ws)
    ai_server.reset({"ok": True}, sequence_answer(1))  # the key check, then the draft
    key = await api.put(
        "/api/v1/settings/ai-key", headers=ws.headers, json={"provider": "openai", "key": "sk-own-12345"}
    )
    assert key.status_code == 200 and key.json() == {"ownAiKey": "openai"}
    written = await api.post(
        f"/api/v1/campaigns/{campaign}/write", headers=ws.headers, json={"mode": "sequence", "steps": 1}
    )
    assert written.status_code == 200 and len(written.json()["created"]) == 1
    assert ai_server.auth[-1] == "Bearer sk-own-12345" and ai_server.paths[-1] == "/openai/chat/completions"
    drafts: dict[str, Any] = (await api.get("/api/v1/billing", headers=ws.headers)).json()["aiDrafts"]
    assert drafts["ownKey"] is True and drafts["limit"] is None and drafts["remaining"] is None
    assert drafts["used"] == PLANS["starter"].ai_drafts and drafts["message"] is None
