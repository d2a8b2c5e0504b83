"""AI labels for replies through the AI port, against a local HTTP server speaking the Chat Completions
protocol: a good answer labels the thread (and the lead, positive labels make it `interested`); an unknown
label, malformed JSON, an error status or a timeout fall back to the rules and say so; `aiLabels` off never
calls the provider."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from aiohttp import web

from outreach_app.adapters.ai import ChatCompletionsClient
from outreach_app.adapters.http import GuardedHttpClient
from outreach_core.inbox.pipeline import ingest_batch
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from tests.conftest import MakeWorkspace
from tests.inbox.ingest import Sent, batch, builtin_id, fetched, lead_row, reply_to, sent_campaign, threads_of
from tests.inbox.test_ingest import events
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import rows

TIMEOUT_S = 1.0


@dataclass
class FakeProvider:
    """A Chat Completions endpoint on loopback; `answer` is what the next requests get."""

    answer: Any = None  # a dict (sent as the assistant's JSON content), a str (sent as is), or an int status
    delay_s: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        self.auth.append(request.headers.get("Authorization"))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if isinstance(self.answer, int):
            return web.json_response({"error": {"message": "nope"}}, status=self.answer)
        content = self.answer if isinstance(self.answer, str) else json.dumps(self.answer)
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
        }
        return web.json_response(body)


@pytest.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    found = FakeProvider()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    found.url = f"http://127.0.0.1:{port}/v1"
    yield found
    await runner.cleanup()


@pytest.fixture
async def ai_runtime(settings: Settings, runtime: Runtime, provider: FakeProvider) -> AsyncIterator[Runtime]:
    """A runtime on the test database whose AI port is the fake provider, wired as bootstrap wires it."""
    configured = settings.model_copy(
        update={
            "ai_base_url": provider.url,
            "ai_model": "test-model",
            "ai_api_key": "sk-test",
            "ai_timeout_s": TIMEOUT_S,
        }
    )
    ai = ChatCompletionsClient.from_settings(configured)
    assert ai is not None
    rt = Runtime(configured, engine=runtime.engine, ports=Ports(clock=runtime.ports.clock, ai=ai))
    yield rt
    await ai.aclose()


@pytest.fixture
def smtp(smtp_servers: dict[str, SmtpServer]) -> SmtpServer:
    return smtp_servers["starttls"]


async def replied(
    http: httpx.AsyncClient, ws: Any, smtp: SmtpServer, users: Users, rt: Runtime, email: str, text: str
) -> Sent:
    sent = await sent_campaign(http, ws, smtp, users, [email])
    assert await ingest_batch(rt, batch(sent, fetched(reply_to(sent.received[email], text)))) == 1
    return sent


async def test_a_good_answer_labels_the_thread_and_the_lead(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users,
    provider: FakeProvider, ai_runtime: Runtime,
) -> None:  # fmt: skip
    provider.answer = {"label": "Interested", "reason": "Asks for pricing and a call."}
    ws = await make_workspace()
    email = "ola@ola-corp.example"
    sent = await replied(http, ws, smtp, mail_users, ai_runtime, email, "Sounds good, what does it cost?")
    [thread] = await threads_of(ws)
    assert (thread.label_name, thread.label_source) == ("Interested", "ai")
    assert thread.label_reason == "AI: Asks for pricing and a call."
    lead = await lead_row(ws, sent.leads[email])
    assert lead.status == "interested"
    [labeled] = await events(ws, "lead.labeled")
    assert labeled["data"]["label"] == {"id": await builtin_id(ws, "interested"), "name": "Interested"}
    assert labeled["data"]["source"] == "ai" and labeled["data"]["thread"]["id"] == thread.id
    [event] = await events(ws, "lead.replied")
    assert event["data"]["lead"]["status"] == "interested"
    [cl] = await rows(ws, "campaign_leads", campaign_id=sent.campaign_id)
    assert cl.status == "replied"
    # what the provider got: the model, JSON mode, the key, the labels and only the reply's own words
    [request] = provider.requests
    assert request["model"] == "test-model" and request["response_format"] == {"type": "json_object"}
    assert provider.auth == ["Bearer sk-test"]
    prompt = request["messages"][-1]["content"]
    assert "- Interested (positive)" in prompt and "- Bounce (warning)" in prompt
    assert "what does it cost?" in prompt and "wrote:" not in prompt


@pytest.mark.parametrize(
    ("answer", "delay_s", "why"),
    [
        ({"label": "Super hot", "reason": "Very keen."}, 0.0, "AI answered an unknown label 'Super hot'"),
        ("Interested, because they asked for pricing", 0.0, "AI answer was not JSON"),
        (500, 0.0, "AI unavailable: HTTP 500"),
        ({"label": "Interested", "reason": "late"}, TIMEOUT_S + 1.0, "AI unavailable: timeout after 1s"),
    ],
    ids=["invalid-label", "malformed", "error-status", "timeout"],
)
async def test_a_failing_provider_falls_back_to_the_rules(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users,
    provider: FakeProvider, ai_runtime: Runtime, answer: Any, delay_s: float, why: str,
) -> None:  # fmt: skip
    provider.answer, provider.delay_s = answer, delay_s
    ws = await make_workspace()
    email = "pia@pia-corp.example"
    sent = await replied(http, ws, smtp, mail_users, ai_runtime, email, "Sounds good, what does it cost?")
    [thread] = await threads_of(ws)
    assert thread.label_id is None and thread.label_source == "rules"
    assert why in thread.label_reason
    assert (await lead_row(ws, sent.leads[email])).status == "replied"  # still a reply, with its effects
    assert len(await events(ws, "lead.replied")) == 1 and await events(ws, "lead.labeled") == []


async def test_rule_kinds_and_ai_labels_off_never_reach_the_provider(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, smtp: SmtpServer, mail_users: Users,
    provider: FakeProvider, ai_runtime: Runtime,
) -> None:  # fmt: skip
    provider.answer = {"label": "Interested", "reason": "x"}
    ws = await make_workspace()
    email = "quin@quin-corp.example"
    sent = await sent_campaign(http, ws, smtp, mail_users, [email])
    ooo = reply_to(
        sent.received[email], "I am out of the office.", headers={"Auto-Submitted": "auto-replied"}
    )
    assert await ingest_batch(ai_runtime, batch(sent, fetched(ooo))) == 1
    assert provider.requests == []
    [thread] = await threads_of(ws)
    assert (thread.label_name, thread.label_source) == ("Out of office", "rules")

    ws2 = await make_workspace()
    resp = await http.patch("/api/v1/settings/sending", headers=ws2.headers, json={"aiLabels": False})
    assert resp.status_code == 200, resp.text
    sent2 = await replied(http, ws2, smtp, mail_users, ai_runtime, "ray@ray-corp.example", "Tell me more.")
    assert provider.requests == []
    [thread2] = await threads_of(ws2)
    assert thread2.label_id is None and thread2.label_source == "rules"
    assert (await lead_row(ws2, sent2.leads["ray@ray-corp.example"])).status == "replied"


async def test_the_adapter_needs_a_base_url_and_a_model(settings: Settings) -> None:
    assert ChatCompletionsClient.from_settings(settings) is None
    partial = settings.model_copy(update={"ai_base_url": "http://127.0.0.1:9/v1"})
    assert ChatCompletionsClient.from_settings(partial) is None
    client = ChatCompletionsClient(
        "http://127.0.0.1:9/v1",
        "m",
        api_key=None,
        timeout_s=1.0,
        http=GuardedHttpClient(allow_private_urls=True),
    )
    answer = await client.complete([{"role": "user", "content": "hi"}])
    assert answer.content is None and answer.error  # nothing listens on port 9: a short reason, no exception
    await client.aclose()
