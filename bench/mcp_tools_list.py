"""What an assistant is sent when it lists the MCP tools, and what the tool-set selection costs.

    .venv/bin/python bench/mcp_tools_list.py [--rounds 200]

Prints, for the whole server and a few selections (one set, two sets, read-only): the number of tools and
the bytes of the `tools/list` result (JSON), split into input schemas, output schemas and descriptions;
then the same for the schemas as the SDK generated them (before `mcp_server/schemas.py` shares repeated
parts and drops derived titles); then the server-side time of one `tools/list` with and without the
selection (in-process client, no network: the middleware's cost per request, µs). No database is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from mcp import Client
from mcp.server.context import ServerRequestContext

import mcp_server.tools as tools_module
from mcp_server.server import api_key_principal_source, build_mcp
from mcp_server.tools import OutreachMCP
from mcp_server.toolsets import Selection
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings


def _sizes(tools: list[Any]) -> tuple[int, int, int, int]:
    dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    inputs = sum(len(json.dumps(t["inputSchema"])) for t in dumped)
    outputs = sum(len(json.dumps(t.get("outputSchema", {}))) for t in dumped)
    descriptions = sum(len(t.get("description", "")) for t in dumped)
    return len(json.dumps(dumped)), inputs, outputs, descriptions


def _server(runtime: Runtime, selection: Selection | None, compact: bool = True) -> OutreachMCP:
    if not compact:
        tools_module.compact_schema = lambda schema: schema  # type: ignore[assignment]
    try:
        mcp = build_mcp(runtime, api_key_principal_source("unused"))
    finally:
        tools_module.compact_schema = _COMPACT  # type: ignore[assignment]
    if selection is not None:
        original = mcp.reachable

        def reachable(ctx: ServerRequestContext[Any, Any]) -> list[Any]:
            return [e for e in original(ctx) if selection.allows(e)]

        mcp.reachable = reachable  # type: ignore[method-assign]
    return mcp


_COMPACT = tools_module.compact_schema


async def _list(mcp: OutreachMCP, rounds: int) -> tuple[list[Any], float]:
    async with Client(mcp) as client:
        tools = (await client.list_tools()).tools
        start = time.perf_counter()
        for _ in range(rounds):
            await client.session.list_tools()
        elapsed = time.perf_counter() - start
    return tools, elapsed / rounds * 1e6


async def main(rounds: int) -> None:
    settings = Settings(database_url="sqlite+aiosqlite:///:memory:", secret_key="bench" * 8)
    runtime = Runtime(settings)
    rows = [
        ("every tool", None),
        ("leads", Selection(frozenset({"leads"}))),
        ("leads,campaigns", Selection(frozenset({"leads", "campaigns"}))),
        ("read-only", Selection(read_only=True)),
    ]
    print(f"{'selection':<18} {'tools':>5} {'bytes':>8} {'inputs':>8} {'outputs':>8} {'descr.':>7} {'µs':>8}")
    for label, selection in rows:
        tools, us = await _list(_server(runtime, selection), rounds)
        total, inputs, outputs, descriptions = _sizes(tools)
        sizes = f"{total:>8,} {inputs:>8,} {outputs:>8,} {descriptions:>7,}"
        print(f"{label:<18} {len(tools):>5} {sizes} {us:>8.0f}")
    tools, us = await _list(_server(runtime, None, compact=False), rounds)
    total, inputs, outputs, descriptions = _sizes(tools)
    sizes = f"{total:>8,} {inputs:>8,} {outputs:>8,} {descriptions:>7,}"
    print(f"{'every, as the SDK':<18} {len(tools):>5} {sizes} {us:>8.0f}")
    await runtime.engine.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    asyncio.run(main(parser.parse_args().rounds))
