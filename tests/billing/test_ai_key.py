"""The workspace's own AI key: set after a check with its provider, stored encrypted, never returned,
`ownAiKey` reports the provider; it replaces the server's key for reply labels (as the provider sees the
request), writing and website drafts; owners and admins only."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import select

from outreach_app.adapters.ai import ChatCompletionsClient, OwnKeyClients
from outreach_core.ai.keys import AI_KEY
from outreach_core.inbox.pipeline import ingest_batch
from outreach_core.kernel.crypto import decrypt
from outreach_core.kernel.db.tables import workspaces
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from tests.billing.conftest import Served, _settings
from tests.billing.servers import FakeAi
from tests.conftest import MakeWorkspace
from tests.inbox.ingest import batch, fetched, reply_to, sent_campaign, threads_of
from tests.mail_servers import SmtpServer, Users

KEY = "sk-workspace-own-0123456789"


async def test_set_and_delete_the_key(
    billing_app: Served, api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    ai_server.reset({"ok": True})
    answer = await api.put(
        "/api/v1/settings/ai-key", headers=ws.headers, json={"provider": "google", "key": KEY}
    )
    assert answer.status_code == 200 and answer.json() == {"ownAiKey": "google"}
    assert KEY not in answer.text
    assert ai_server.auth == [f"Bearer {KEY}"] and ai_server.paths == ["/google/chat/completions"]  # checked
    settings = (await api.get("/api/v1/settings/sending", headers=ws.headers)).json()
    assert settings["ownAiKey"] == "google"
    for path in ("/api/v1/settings/sending", "/api/v1/billing", "/api/v1/me"):
        assert KEY not in (await api.get(path, headers=ws.headers)).text
    async with ws.runtime.engine.connect() as conn:
        stored = (
            await conn.execute(
                select(workspaces.c.ai_key_encrypted).where(workspaces.c.id == ws.workspace_id)
            )
        ).scalar_one()
    assert KEY not in stored and decrypt(billing_app.runtime.settings, stored, AI_KEY) == KEY
    deleted = await api.delete("/api/v1/settings/ai-key", headers=ws.headers)
    assert deleted.status_code == 200 and deleted.json() == {"ownAiKey": None}
    assert (await api.get("/api/v1/settings/sending", headers=ws.headers)).json()["ownAiKey"] is None


async def test_a_key_the_provider_refuses_is_not_saved(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    ai_server.refuse_keys.add("sk-wrong-123456")
    refused = await api.put(
        "/api/v1/settings/ai-key", headers=ws.headers, json={"provider": "openai", "key": "sk-wrong-123456"}
    )
    assert refused.status_code == 422 and refused.json()["error"]["details"]["fields"][0]["path"] == "key"
    assert "refused this key (HTTP 401)" in refused.json()["error"]["message"]
    assert (await api.get("/api/v1/settings/sending", headers=ws.headers)).json()["ownAiKey"] is None
    for bad in (
        {"provider": "anthropic", "key": KEY},
        {"provider": "openai", "key": "short"},
        {"provider": "openai"},
    ):
        assert (await api.put("/api/v1/settings/ai-key", headers=ws.headers, json=bad)).status_code == 422


async def test_members_may_not_set_or_delete_it(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    admin, member = await ws.add_member("admin"), await ws.add_member("member")
    ai_server.reset({"ok": True}, default={"ok": True})
    refused = await api.put(
        "/api/v1/settings/ai-key", headers=member.headers, json={"provider": "openai", "key": KEY}
    )
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert ai_server.requests == []  # refused before the key is tried anywhere
    assert (await api.delete("/api/v1/settings/ai-key", headers=member.headers)).status_code == 403
    ok = await api.put(
        "/api/v1/settings/ai-key", headers=admin.headers, json={"provider": "openai", "key": KEY}
    )
    assert ok.status_code == 200


@pytest.fixture
async def labelling_runtime(
    settings: Settings, runtime: Runtime, ai_server: FakeAi
) -> AsyncIterator[Runtime]:
    """The inbox's runtime as bootstrap wires it: the server's AI endpoint and clients on own keys."""
    configured = _settings(settings, ai_server)
    ports = Ports(
        clock=runtime.ports.clock,
        ai=ChatCompletionsClient.from_settings(configured),
        ai_keys=OwnKeyClients(configured),
    )
    yield Runtime(configured, engine=runtime.engine, ports=ports)
    for port in (ports.ai, ports.ai_keys):
        await port.aclose()  # type: ignore[union-attr]


async def test_reply_labels_use_the_workspaces_own_key(
    http: httpx.AsyncClient,
    api: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
    ai_server: FakeAi,
    labelling_runtime: Runtime,
) -> None:
    ws = await make_workspace()
    ai_server.reset({"ok": True})
    assert (
        await api.put("/api/v1/settings/ai-key", headers=ws.headers, json={"provider": "openai", "key": KEY})
    ).status_code == 200
    ai_server.reset({"label": "Interested", "reason": "Asks for a call."})
    email = "own-key@own-key-corp.example"
    sent = await sent_campaign(http, ws, smtp_servers["starttls"], mail_users, [email])
    reply = reply_to(sent.received[email], "Happy to talk, when suits you?")
    assert await ingest_batch(labelling_runtime, batch(sent, fetched(reply))) == 1
    assert ai_server.auth == [f"Bearer {KEY}"] and ai_server.paths == ["/openai/chat/completions"]
    [thread] = await threads_of(ws)
    assert (thread.label_name, thread.label_source) == ("Interested", "ai")
