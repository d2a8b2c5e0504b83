"""What an assistant reads about the tools, checked over a real MCP client (streamable HTTP, and stdio for
the tool sets): a short whole title, a description whose first paragraph is whole, every argument described
(path ids saying what they identify), enums listed, hints true to the MCP schema's meaning, instructions
that name only what exists; tool sets and read-only mode through the path, the headers, the server's
settings, the OAuth scopes and `outreach mcp`; an unknown tool is a JSON-RPC invalid-params error.

Generic on purpose: every rule is stated over the catalogue, so a tool added later is held to it without
this file changing (docs/architecture.md, "Adding an endpoint").
"""

from __future__ import annotations

import json
import logging
import re
import sys
import typing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, Tool
from pydantic import BaseModel

from mcp_server.schemas import compact_schema
from mcp_server.toolsets import toolset_names
from outreach_app.asgi import build_app
from outreach_core.catalog import all_endpoints
from outreach_core.kernel.endpoint import AnyEndpoint
from outreach_core.kernel.runtime import Runtime
from outreach_core.oauth import server as oauth
from tests.conftest import MakeWorkspace, serving
from tests.oauth.helpers import pkce_pair, register
from tests.test_cli import ROOT, _env, run_cli

TOOLS: dict[str, AnyEndpoint] = {e.name: e for e in all_endpoints() if e.tool}
SETS = toolset_names(TOOLS.values())
TITLE_MAX = 40
WRITES_THAT_REPLACE = ("update_", "set_", "save_", "delete_", "remove_", "revoke_", "disconnect_", "unlabel_")
WRITES_THAT_ADD = ("create_", "add_", "import_")
PATH_ID = (
    r"The (id of the [a-zA-Z ]+|[a-zA-Z ]+'s name, as listed|[a-zA-Z ]+ of the [a-zA-Z ]+)(, in the .+)?\."
)
"""What a path parameter's description says: what it identifies (architecture.md, "Adding an endpoint")."""
DANGLING = {"a", "an", "the", "and", "or", "of", "to", "with", "for", "in", "on", "by", "from", "as", "at"}


@asynccontextmanager
async def session(base: str, token: str, path: str = "/mcp", **headers: str) -> AsyncIterator[Client]:
    auth = {"Authorization": f"Bearer {token}", **headers}
    async with (
        httpx2.AsyncClient(headers=auth, timeout=30) as hc,
        Client(streamable_http_client(f"{base}{path}", http_client=hc)) as client,
    ):
        yield client


async def listed(client: Client) -> dict[str, Tool]:
    return {t.name: t for t in (await client.list_tools()).tools}


def _whole(text: str) -> bool:
    return text.rstrip().endswith((".", "!", "?", ".)", ".”", "`."))


def _literal_in(annotation: Any) -> bool:
    if typing.get_origin(annotation) is Literal:
        return True
    return any(_literal_in(a) for a in typing.get_args(annotation))


def _has_enum(schema: Any, defs: dict[str, Any]) -> bool:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return _has_enum(defs[ref.rsplit("/", 1)[1]], defs)
        if "enum" in schema or "const" in schema:
            return True
        return any(_has_enum(v, defs) for k, v in schema.items() if k not in ("properties", "default"))
    if isinstance(schema, list):
        return any(_has_enum(v, defs) for v in schema)
    return False


def _fields(model: type[BaseModel] | None) -> dict[str, Any]:
    if model is None:
        return {}
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items()}


async def test_every_tool_says_what_it_is(mcp_session: Any, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    async with mcp_session(ws.api_key) as client:
        tools = await listed(client)
    assert set(tools) == set(TOOLS)
    for name, tool in tools.items():
        endpoint = TOOLS[name]
        # a short human title, whole: no cut-off sentence, no full stop, no dangling word
        hints = tool.annotations
        assert hints is not None and tool.title and hints.title == tool.title, name
        assert len(tool.title) <= TITLE_MAX and tool.title[0].isupper(), (name, tool.title)
        assert not tool.title.endswith((".", ",", ":", ";", "(")), (name, tool.title)
        assert tool.title.split()[-1].lower() not in DANGLING, (name, tool.title)
        # the description's first paragraph is whole, and says more than the title
        assert tool.description is not None
        first = tool.description.split("\n\n")[0]
        assert _whole(first) and "\n" not in first and len(first) > len(tool.title), (name, first)
        # every argument described; path ids say what they identify; enums listed
        properties = tool.input_schema.get("properties", {})
        defs = tool.input_schema.get("$defs", {})
        for arg, schema in properties.items():
            assert schema.get("description"), (name, arg)
            if arg in endpoint.path_params:
                assert re.fullmatch(
                    PATH_ID,
                    schema["description"],
                ), (
                    name,
                    arg,
                    schema["description"],
                )
        for arg, annotation in {**_fields(endpoint.query), **_fields(endpoint.body)}.items():
            if _literal_in(annotation):
                assert _has_enum(properties[arg], defs), (name, arg)
        # hints true to the MCP schema's meaning
        assert hints.read_only_hint is endpoint.read_only, name
        assert hints.open_world_hint is not None, name
        # outside I/O before the transaction: it reaches outside (but `import_leads`' step queues a chunk
        # in SQLite's side file, kernel/db/side_queue.py)
        if endpoint.prepare is not None and name != "import_leads":
            assert hints.open_world_hint, name
        if endpoint.read_only:
            assert not hints.destructive_hint, name
            continue
        assert hints.destructive_hint is not None and hints.idempotent_hint is not None, name
        if name.startswith(WRITES_THAT_REPLACE):
            assert hints.destructive_hint, name
        if name.startswith(WRITES_THAT_ADD):
            assert not hints.destructive_hint, name
        if name.startswith(("update_", "save_")):
            assert hints.idempotent_hint, name


async def test_the_hints_the_issue_names(mcp_session: Any, make_workspace: MakeWorkspace) -> None:
    """The tools that send email, log in to mail servers, query DNS or call webhooks say they reach
    outside; replacing a sequence or updating something says it is destructive."""
    ws = await make_workspace()
    async with mcp_session(ws.api_key) as client:
        tools = await listed(client)
    outside = {n for n, t in tools.items() if t.annotations and t.annotations.open_world_hint}
    assert {
        "reply_to_thread", "test_mailbox", "retest_mailbox", "create_mailbox", "import_mailboxes",
        "update_mailbox", "detect_mailbox", "test_webhook", "redeliver_webhook", "launch_campaign",
        "verify_leads", "write_sequence", "draft_offer",
    } <= outside  # fmt: skip
    assert "list_leads" not in outside and "create_list" not in outside
    destructive = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
    assert {"set_sequence", "update_campaign", "update_lead", "update_variant", "delete_leads"} <= destructive
    assert not {"create_campaign", "add_step", "list_campaigns"} & destructive
    assert tools["get_campaign"].input_schema["properties"]["id"]["description"] == "The id of the campaign."
    step = tools["update_step"].input_schema["properties"]["stepId"]["description"]
    assert step == "The id of the step, in the campaign given as `id`."


async def test_an_unknown_tool_is_a_protocol_error_without_a_traceback(
    mcp_session: Any, make_workspace: MakeWorkspace, caplog: pytest.LogCaptureFixture
) -> None:
    ws = await make_workspace()
    async with mcp_session(ws.api_key) as client:
        with caplog.at_level(logging.DEBUG), pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", {})
    assert raised.value.error.code == INVALID_PARAMS
    assert "Unknown tool: no_such_tool" in raised.value.error.message
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_instructions_name_only_what_exists(mcp_session: Any, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    async with mcp_session(ws.api_key) as client:
        text = client.instructions or ""
    named = re.search(r"tool sets?: ([a-z_, ]+)", text)
    assert named is not None and named.group(1).split(", ") == SETS, text
    assert "analytics" not in SETS or "analytics" in text  # a domain is named only when it has tools
    assert "domains" not in text.replace("tool sets", "")


def _set_of(tools: dict[str, Tool]) -> set[str]:
    return {TOOLS[n].toolset_name for n in tools}


async def test_tool_sets_by_path_and_header(live_server: str, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    async with session(live_server, ws.api_key, "/mcp/leads,lists") as client:
        tools = await listed(client)
        assert _set_of(tools) == {"leads", "lists"}
        assert tools.keys() == {n for n, e in TOOLS.items() if e.toolset_name in ("leads", "lists")}
        assert "leads, lists" in (client.instructions or "")
        assert not (await client.call_tool("list_leads", {})).is_error
        with pytest.raises(MCPError) as hidden:
            await client.call_tool("list_campaigns", {})
        assert hidden.value.error.code == INVALID_PARAMS
    async with session(live_server, ws.api_key, **{"X-MCP-Toolsets": "campaigns"}) as client:
        assert _set_of(await listed(client)) == {"campaigns"}
    # the path and the header together: only what both allow
    async with session(live_server, ws.api_key, "/mcp/leads,lists", **{"X-MCP-Toolsets": "lists"}) as client:
        assert _set_of(await listed(client)) == {"lists"}
    async with httpx.AsyncClient(base_url=live_server, headers=ws.headers) as http:
        wrong_path = await http.post("/mcp/leadz", json={})
        wrong_header = await http.post("/mcp", json={}, headers={"X-MCP-Toolsets": "leads,nope"})
    assert wrong_path.status_code == 404 and wrong_path.json()["error"]["details"]["unknown"] == ["leadz"]
    assert wrong_header.status_code == 400 and wrong_header.json()["error"]["details"]["unknown"] == ["nope"]
    assert "leads" in wrong_header.json()["error"]["details"]["toolsets"]


async def test_read_only_by_path_and_header(live_server: str, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    reads = {n for n, e in TOOLS.items() if e.read_only}
    for path, headers in (("/mcp/readonly", {}), ("/mcp", {"X-MCP-Readonly": "1"})):
        async with session(live_server, ws.api_key, path, **headers) as client:
            tools = await listed(client)
            assert tools.keys() == reads and all(
                t.annotations and t.annotations.read_only_hint for t in tools.values()
            )
            assert "read-only tools only" in (client.instructions or "")
            with pytest.raises(MCPError) as refused:
                await client.call_tool("create_list", {"name": "not allowed"})
            assert refused.value.error.code == INVALID_PARAMS
    async with session(live_server, ws.api_key, "/mcp/lists/readonly") as client:
        assert (await listed(client)).keys() == {n for n in reads if TOOLS[n].toolset_name == "lists"}
    async with httpx.AsyncClient(base_url=live_server, headers=ws.headers) as http:
        lists = (await http.get("/api/v1/lists")).json()
    assert "not allowed" not in str(lists)


async def test_oauth_scopes_choose_tool_sets(
    runtime: Runtime, live_server: str, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    client_id = await register(runtime, scope="leads readonly")
    code = await runtime.system(
        oauth.issue_authorization_code,
        api_key=ws.api_key,
        client_id=client_id,
        redirect_uri="http://127.0.0.1:9/callback",
        redirect_uri_explicit=True,
        code_challenge=pkce_pair()[1],
        scopes=["leads", "readonly"],
        resource=runtime.settings.mcp_resource_url,
    )
    tokens = await runtime.system(oauth.exchange_authorization_code, client_id, code)
    async with session(live_server, tokens.access_token) as client:
        tools = await listed(client)
    assert tools.keys() == {n for n, e in TOOLS.items() if e.toolset_name == "leads" and e.read_only}
    async with session(live_server, ws.api_key) as client:  # an API key has no scopes: every set
        assert (await listed(client)).keys() == TOOLS.keys()


async def test_the_servers_own_selection(runtime: Runtime, make_workspace: MakeWorkspace) -> None:
    """OUTREACH_MCP_TOOLSETS and OUTREACH_MCP_READ_ONLY: a request can only narrow them further."""
    ws = await make_workspace()
    narrowed = Runtime(
        runtime.settings.model_copy(update={"mcp_toolsets": "campaigns, inbox", "mcp_read_only": True}),
        engine=runtime.engine,
        ports=runtime.ports,
    )
    async with serving(build_app(narrowed, flush_usage=False)) as base:
        async with session(base, ws.api_key) as client:
            tools = await listed(client)
            assert tools.keys() == {
                n for n, e in TOOLS.items() if e.toolset_name in ("campaigns", "inbox") and e.read_only
            }
            assert "2 tool sets: campaigns, inbox (read-only tools only)" in (client.instructions or "")
        async with session(base, ws.api_key, "/mcp/inbox") as client:
            assert _set_of(await listed(client)) == {"inbox"}
        async with httpx.AsyncClient(base_url=base, headers=ws.headers) as http:
            outside = await http.post("/mcp/leads", json={})
        assert outside.status_code == 404  # not a set of this server


async def test_tool_sets_and_read_only_over_stdio(settings: Any, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "outreach_app.cli", "mcp"],
        env=_env(
            settings, OUTREACH_API_KEY=ws.api_key, OUTREACH_MCP_TOOLSETS="lists", OUTREACH_MCP_READ_ONLY="1"
        ),
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        tools = await listed(client)
        assert tools.keys() == {n for n, e in TOOLS.items() if e.toolset_name == "lists" and e.read_only}
        assert not (await client.call_tool("list_lists", {})).is_error
        with pytest.raises(MCPError) as refused:
            await client.call_tool("create_list", {"name": "x"})
        assert refused.value.error.code == INVALID_PARAMS
        assert "1 tool set: lists (read-only tools only)" in (client.instructions or "")


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """`schema` with every local `$ref` replaced by its definition and without `$defs` or titles."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return _inline({**defs[ref.removeprefix("#/$defs/")], **rest}, defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k not in ("$defs", "title")}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def test_shared_schemas_say_the_same(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compacted tool schemas accept and describe exactly what the SDK generated: with every `$ref`
    inlined and titles aside, the two are equal; compacting again changes nothing."""
    import mcp_server.tools as tools_module
    from mcp_server.server import api_key_principal_source, build_mcp

    generated: list[dict[str, Any]] = []

    def keep(schema: dict[str, Any]) -> dict[str, Any]:
        generated.append(schema)
        return compact_schema(schema)

    monkeypatch.setattr(tools_module, "compact_schema", keep)
    build_mcp(runtime, api_key_principal_source("unused"))
    assert len(generated) >= len(TOOLS)
    for schema in generated:
        compacted = compact_schema(schema)
        assert compact_schema(compacted) == compacted
        assert _inline(compacted, compacted.get("$defs", {})) == _inline(schema, schema.get("$defs", {}))


async def test_an_unknown_set_in_the_settings_is_one_clear_line(
    settings: Any, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    done = run_cli(settings, "mcp", OUTREACH_API_KEY=ws.api_key, OUTREACH_MCP_TOOLSETS="leads,nope")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["details"]["unknown"] == ["nope"] and "leads" in error["details"]["toolsets"]


async def test_the_consent_page_names_the_requested_sets(
    runtime: Runtime, live_server: str, make_workspace: MakeWorkspace
) -> None:
    from mcp_server.consent import ConsentRequest, consent_url

    client_id = await register(runtime, scope="leads campaigns readonly")

    def page_for(scopes: list[str]) -> str:
        request = ConsentRequest(
            client_id=client_id,
            redirect_uri="http://127.0.0.1:9/callback",
            redirect_uri_explicit=True,
            code_challenge=pkce_pair()[1],
            state=None,
            scopes=scopes,
            resource=runtime.settings.mcp_resource_url,
        )
        url = consent_url(
            runtime.settings, runtime.settings.resolved_secret_key(), request, runtime.ports.clock.now()
        )
        return url.replace(runtime.settings.public_url, live_server)

    async with httpx.AsyncClient() as http:
        narrowed = (await http.get(page_for(["leads", "campaigns", "readonly"]))).text
        everything = (await http.get(page_for([]))).text
    assert (
        "only the tool sets <strong>leads, campaigns</strong>, and only tools that change nothing" in narrowed
    )
    assert "tool sets" not in everything
