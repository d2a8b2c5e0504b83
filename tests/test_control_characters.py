"""Names and values that become email headers refuse control characters (422), through REST, MCP and the
operator CLI; free text keeps its line breaks. Nothing refused is stored."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest

from outreach_core.kernel.settings import Settings
from outreach_core.labels.builtin import BUILTIN_NAMES
from tests.campaigns.helpers import add_mailbox, call, ok
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.test_cli import run_cli

INJECTION = "Good\r\nBcc: x@evil.test"
TERMINAL = "a\u0007\u001b[31mb"
BAD_VALUES = [INJECTION, TERMINAL, "tab\there", "next\u0085line", "csi\u009b31m", "del\u007f"]
GOOGLE = {"provider": "google_app", "email": "sam@gmail.com", "password": "abcd efgh ijkl mnop"}
SMTP_ROW = {
    "email": "sam@seller.test",
    "password": "secret",
    "smtp": {"host": "smtp.seller.test", "port": 465, "security": "tls", "user": "sam@seller.test"},
    "imap": {"host": "imap.seller.test", "port": 993, "security": "tls", "user": "sam@seller.test"},
}


async def refused(http: httpx.AsyncClient, ws: WorkspaceHandle, method: str, path: str, body: Any) -> str:
    status, payload = await call(http, ws, method, path, body)
    assert status == 422, (method, path, body, payload)
    assert payload["error"]["code"] == "invalid_input"
    fields = [f for f in payload["error"]["details"]["fields"] if "control characters" in f["message"]]
    assert fields, payload
    return str(fields[0]["path"])


@pytest.mark.parametrize("bad", BAD_VALUES)
async def test_names_refuse_control_characters_over_rest(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, bad: str
) -> None:
    ws = await make_workspace()
    list_id = (await ok(http, ws, "POST", "/lists", {"name": "Leads"}))["id"]
    label_id = (await ok(http, ws, "POST", "/labels", {"name": "Hot"}))["id"]
    campaign_id = (await ok(http, ws, "POST", "/campaigns", {"name": "Q3"}))["id"]

    assert await refused(http, ws, "POST", "/apiKeys/create", {"name": bad}) == "name"
    assert await refused(http, ws, "POST", "/lists", {"name": bad}) == "name"
    assert await refused(http, ws, "PATCH", f"/lists/{list_id}", {"name": bad}) == "name"
    assert await refused(http, ws, "POST", "/labels", {"name": bad}) == "name"
    assert await refused(http, ws, "PATCH", f"/labels/{label_id}", {"name": bad}) == "name"
    assert await refused(http, ws, "POST", "/campaigns", {"name": bad}) == "name"
    assert await refused(http, ws, "PATCH", f"/campaigns/{campaign_id}", {"name": bad}) == "name"
    rows = [{"email": "ada@acme.test"}]
    path = await refused(http, ws, "POST", "/leads/import", {"rows": rows, "list": {"name": bad}})
    assert path.startswith("list")
    assert await refused(http, ws, "POST", "/leads/import", {"rows": rows, "fileName": bad}) == "fileName"

    # nothing refused was stored
    keys = await ok(http, ws, "GET", "/api-keys")
    assert [k["name"] for k in keys] == ["outreach init"]
    assert [x["name"] for x in (await ok(http, ws, "GET", "/lists"))["lists"]] == ["Leads"]
    labels = (await ok(http, ws, "GET", "/labels"))["labels"]
    assert [x["name"] for x in labels if x["name"] not in BUILTIN_NAMES] == ["Hot"]
    assert (await ok(http, ws, "GET", f"/campaigns/{campaign_id}"))["name"] == "Q3"
    assert (await ok(http, ws, "GET", "/leads/imports"))["imports"] == []


@pytest.mark.parametrize("bad", BAD_VALUES)
async def test_header_values_refuse_control_characters_over_rest(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, bad: str
) -> None:
    ws = await make_workspace()
    box = await add_mailbox(ws, "sam@seller.test", display_name="Sam")
    campaign_id = (await ok(http, ws, "POST", "/campaigns", {"name": "Q3"}))["id"]

    # the mailbox display name is the From name of every email
    assert await refused(http, ws, "POST", "/mailboxes", {**GOOGLE, "displayName": bad}) == "displayName"
    assert await refused(http, ws, "POST", "/mailboxes/test", {**GOOGLE, "displayName": bad}) == "displayName"
    path = await refused(http, ws, "POST", "/mailboxes/import", {"rows": [{**SMTP_ROW, "displayName": bad}]})
    assert path == "rows.0.displayName"
    assert await refused(http, ws, "PATCH", f"/mailboxes/{box}", {"displayName": bad}) == "displayName"
    # a subject is folded onto one line when saved (docs/campaigns.md), never refused
    sequence = {"steps": [{"variants": [{"subject": bad, "body": "Hi"}]}]}
    await ok(http, ws, "PUT", f"/campaigns/{campaign_id}/sequence", sequence)
    saved = (await ok(http, ws, "GET", f"/campaigns/{campaign_id}"))["steps"][0]["variants"][0]["subject"]
    assert not any(ch in saved for ch in "\r\n\t\u0007\u001b\u0085\u009b\u007f")

    assert (await ok(http, ws, "GET", f"/mailboxes/{box}"))["displayName"] == "Sam"
    assert len((await ok(http, ws, "GET", "/mailboxes"))["mailboxes"]) == 1


async def test_free_text_keeps_its_line_breaks(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    box = await add_mailbox(ws, "sam@seller.test")
    await ok(
        http,
        ws,
        "PATCH",
        f"/mailboxes/{box}",
        {"displayName": "Sam Séller", "signature": "Sam\n\tSeller Inc"},
    )
    changed = await ok(http, ws, "GET", f"/mailboxes/{box}")
    assert changed["displayName"] == "Sam Séller" and changed["signature"] == "Sam\n\tSeller Inc"
    campaign_id = (await ok(http, ws, "POST", "/campaigns", {"name": "Café ☕ outreach"}))["id"]
    sequence = {"steps": [{"variants": [{"subject": "Hi {{first_name}}", "body": "Line one\n\nLine\ttwo"}]}]}
    await ok(http, ws, "PUT", f"/campaigns/{campaign_id}/sequence", sequence)
    assert (await ok(http, ws, "POST", "/labels", {"name": "Très intéressé"}))["name"] == "Très intéressé"


async def test_mcp_tools_refuse_control_characters(mcp_session: Any, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    box = await add_mailbox(ws, "sam@seller.test", display_name="Sam")
    calls = [
        ("create_api_key", {"name": TERMINAL}),
        ("create_list", {"name": INJECTION}),
        ("create_label", {"name": TERMINAL}),
        ("create_campaign", {"name": INJECTION}),
        ("create_mailbox", {**GOOGLE, "displayName": INJECTION}),
        ("test_mailbox", {**GOOGLE, "displayName": INJECTION}),
        ("import_mailboxes", {"rows": [{**SMTP_ROW, "displayName": INJECTION}]}),
        ("update_mailbox", {"id": box, "displayName": INJECTION}),
    ]
    async with mcp_session(ws.api_key) as client:
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            assert result.is_error, (tool, result)
            assert result.structured_content["error"]["code"] == "invalid_input", (tool, result)
        mailbox = await client.call_tool("get_mailbox", {"id": box})
        assert mailbox.structured_content["displayName"] == "Sam"


@pytest.mark.parametrize(
    "args",
    [
        ["--name", INJECTION, "--workspace", "Acme"],
        ["--name", "Ada", "--workspace", TERMINAL],
    ],
)
def test_operator_cli_refuses_control_characters_in_names(settings: Settings, args: list[str]) -> None:
    email = f"ctl-{os.getpid()}-{len(args[1])}@example.com"
    done = run_cli(settings, "init", "--email", email, *args)
    assert done.returncode == 1, done.stdout
    error = json.loads(done.stderr.splitlines()[-1])["error"]
    assert error["code"] == "invalid_input" and "control characters" in error["message"]
    added = run_cli(settings, "member", "add", "--workspace", "nobody", "--email", email, "--name", INJECTION)
    assert added.returncode == 1
    assert json.loads(added.stderr.splitlines()[-1])["error"]["code"] == "invalid_input"
