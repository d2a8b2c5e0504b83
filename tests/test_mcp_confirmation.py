"""Tools that "ask to confirm": elicitation with the concrete impact, and the `confirm: true` fallback."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

from mcp_server.server import api_key_principal_source, build_mcp
from outreach_core.api_keys.operations import list_api_keys
from tests.conftest import MakeWorkspace


async def _new_key(client: Client, name: str) -> str:
    created = await client.call_tool("create_api_key", {"name": name})
    assert not created.is_error
    return str(created.structured_content["id"])


async def _active_key_ids(ws: Any) -> set[str]:
    return {k.id for k in await ws.runtime.read(await ws.principal(), list_api_keys)}


async def test_accepted_confirmation_runs_the_tool(runtime: Any, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    asked: list[str] = []

    async def accept(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"confirm": True})

    server = build_mcp(runtime, api_key_principal_source(ws.api_key))
    async with Client(server, elicitation_callback=accept) as client:
        key_id = await _new_key(client, "to revoke")
        result = await client.call_tool("revoke_api_key", {"id": key_id})
    assert not result.is_error, result.structured_content
    assert result.structured_content == {"ok": True}
    assert len(asked) == 1 and "to revoke" in asked[0] and "stops working" in asked[0]
    assert key_id not in await _active_key_ids(ws)


async def test_declined_confirmation_changes_nothing(runtime: Any, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()

    async def decline(_ctx: Any, _params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="decline")

    server = build_mcp(runtime, api_key_principal_source(ws.api_key))
    async with Client(server, elicitation_callback=decline) as client:
        key_id = await _new_key(client, "keep me")
        result = await client.call_tool("revoke_api_key", {"id": key_id})
    assert result.is_error
    assert result.structured_content["error"]["code"] == "declined"
    assert key_id in await _active_key_ids(ws)


async def test_client_without_elicitation_must_pass_confirm(
    runtime: Any, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    server = build_mcp(runtime, api_key_principal_source(ws.api_key))
    async with Client(server) as client:
        key_id = await _new_key(client, "needs confirm")
        refused = await client.call_tool("revoke_api_key", {"id": key_id})
        assert refused.is_error
        error = refused.structured_content["error"]
        assert error["code"] == "confirmation_required"
        assert "confirm: true" in error["message"] and "needs confirm" in error["message"]
        assert key_id in await _active_key_ids(ws)

        done = await client.call_tool("revoke_api_key", {"id": key_id, "confirm": True})
    assert not done.is_error and done.structured_content == {"ok": True}
    assert key_id not in await _active_key_ids(ws)


async def test_tool_annotations_follow_the_catalogue(runtime: Any, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    server = build_mcp(runtime, api_key_principal_source(ws.api_key))
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["get_me"].annotations.read_only_hint is True
    assert tools["list_api_keys"].annotations.read_only_hint is True
    assert tools["revoke_api_key"].annotations.destructive_hint is True
    assert "confirm" in tools["revoke_api_key"].input_schema["properties"]
    assert "confirm" not in tools["create_api_key"].input_schema["properties"]
    assert tools["create_api_key"].input_schema["properties"]["name"]["maxLength"] == 60
    assert tools["get_me"].output_schema is not None
