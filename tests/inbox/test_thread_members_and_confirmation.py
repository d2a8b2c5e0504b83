"""Every member may read, label and answer threads; `reply_to_thread` asks to confirm in MCP, stating what
will be sent. (Another workspace's threads are out of reach: tests/test_isolation_and_roles.py.)"""

from __future__ import annotations

from typing import Any

import httpx
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

from mcp_server.server import api_key_principal_source, build_mcp
from tests.campaigns.helpers import add_lead
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.inbox.thread_seed import T0, minutes, seed_message, seed_thread
from tests.lists.helpers import new_label
from tests.mail_servers import closed_port
from tests.mailboxes.helpers import seed_mailbox


async def _thread(ws: WorkspaceHandle, email: str) -> tuple[str, str, str]:
    box = await seed_mailbox(ws, f"box-{email}", smtp_port=closed_port())
    lead = await add_lead(ws, email, first_name="Their")
    thread = await seed_thread(ws, lead, box, subject="Secret plans")
    await seed_message(ws, thread, box, at=T0 + minutes(1), from_email=email, text="confidential words")
    return thread, lead, box


async def test_members_read_label_and_answer_threads(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    member = await ws.add_member("member")
    thread, _, _ = await _thread(ws, "someone@lead.example")
    label = await new_label(http, ws, "Later")
    headers = member.headers
    assert (await http.get("/api/v1/threads", headers=headers)).json()["total"] == 1
    assert (await http.get(f"/api/v1/threads/{thread}", headers=headers)).status_code == 200
    patched = await http.patch(f"/api/v1/threads/{thread}", headers=headers, json={"labelId": label})
    assert patched.status_code == 200 and patched.json()["label"]["id"] == label
    # the reply is allowed for a member; it fails only at the SMTP server (a closed port here)
    answered = await http.post(f"/api/v1/threads/{thread}/reply", headers=headers, json={"body": "hi"})
    assert answered.status_code == 409 and answered.json()["error"]["code"] == "delivery_failed"
    assert "connection refused" in answered.json()["error"]["details"]["reason"]


async def test_reply_asks_to_confirm_with_what_will_be_sent(
    runtime: Any, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    thread, _, _ = await _thread(ws, "ask@lead.example")
    asked: list[str] = []

    async def decline(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    server = build_mcp(runtime, api_key_principal_source(ws.api_key))
    async with Client(server, elicitation_callback=decline) as client:
        declined = await client.call_tool("reply_to_thread", {"id": thread, "body": "See you on Monday."})
    assert declined.is_error and declined.structured_content["error"]["code"] == "declined"
    [question] = asked
    assert "ask@lead.example" in question and "See you on Monday." in question
    assert 'subject "Re: Secret plans"' in question

    async with Client(server) as client:
        refused = await client.call_tool("reply_to_thread", {"id": thread, "body": "Hi"})
    assert refused.structured_content["error"]["code"] == "confirmation_required"
    detail = (await client_thread(runtime, ws, thread))["messages"]
    assert [m.kind for m in detail] == ["reply"]  # nothing was sent or recorded


async def client_thread(runtime: Any, ws: WorkspaceHandle, thread: str) -> dict[str, Any]:
    from outreach_core.inbox.threads import get_thread

    detail = await runtime.read(await ws.principal(), get_thread, thread)
    return {"messages": detail.messages}
