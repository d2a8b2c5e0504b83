"""Helpers to call one catalogued operation through either door with the same flattened arguments."""

from __future__ import annotations

import re
from typing import Any

import httpx
from mcp import Client

from outreach_core.catalog import all_endpoints
from outreach_core.kernel.endpoint import Endpoint

ENDPOINTS: dict[str, Endpoint] = {e.name: e for e in all_endpoints() if e.tool}

MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
"""A raw MCP `initialize` request, for checking how `/mcp` answers a credential."""
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def split_arguments(
    endpoint: Endpoint, args: dict[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """(path, query, body) for the REST call that corresponds to tool arguments `args`."""
    path = endpoint.path
    for name in endpoint.path_params:
        path = path.replace("{" + name + "}", str(args[name]))
    rest = {k: v for k, v in args.items() if k not in endpoint.path_params and k != "confirm"}
    if endpoint.body is not None:
        return path, {}, rest
    return path, rest, None


async def call_rest(http: httpx.AsyncClient, headers: dict[str, str], tool: str, args: dict[str, Any]) -> Any:
    endpoint = ENDPOINTS[tool]
    path, query, body = split_arguments(endpoint, args)
    response = await http.request(endpoint.method, f"/api/v1{path}", headers=headers, params=query, json=body)
    return response.status_code, response.json()


async def call_mcp(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    result = await client.call_tool(tool, args)
    structured = result.structured_content
    if not result.is_error and isinstance(structured, dict) and set(structured) == {"result"}:
        structured = structured["result"]
    return bool(result.is_error), structured


_ID = re.compile(r"\b[a-z]{2,4}_[0-9a-z]{26}\b")
_KEY = re.compile(r"\bosk_[A-Za-z0-9]{43}\b")
_START = re.compile(r"\bosk_[A-Za-z0-9]{6}\b")
_SIGNING_SECRET = re.compile(r"\bwhsec_[A-Za-z0-9_-]{43}")
_PERSON = re.compile(
    r"\b(?:member|owner)\d+-\d+@example\.com|\b(?:Member|Owner) \d+|\bp\d+@parity\.test|\bparity-\d+\b"
)
_BILLING_LINK = re.compile(r"(/billing/local/(?:checkout|portal)/)[A-Za-z0-9_.-]+")
# a mailbox OAuth authorization URL (issue 32): its state and PKCE challenge are random per call
_OAUTH_RANDOM = re.compile(r"([?&](?:state|code_challenge)=)[^&]+")
_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def normalize(value: Any) -> Any:
    """Replace values generated per call (ids, secrets, timestamps, test people) so two calls compare."""
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, str):
        value = _BILLING_LINK.sub(r"\1<token>", value)
        value = _OAUTH_RANDOM.sub(r"\1<random>", value)
        value = _KEY.sub("<key>", value)
        value = _SIGNING_SECRET.sub("<secret>", value)
        value = _START.sub("<start>", value)
        value = _ID.sub("<id>", value)
        value = _PERSON.sub("<person>", value)
        return _TS.sub("<ts>", value)
    return value
