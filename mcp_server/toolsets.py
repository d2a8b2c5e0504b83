"""MCP tool sets and read-only mode: which tools a session lists and may call.

A tool's set is its catalogue entry's `toolset_name` (the domain package of its operation: `leads`,
`campaigns`, `inbox`, `webhooks` ...). Four things narrow what a session sees, each only ever narrowing:

- the server: `OUTREACH_MCP_TOOLSETS` (comma-separated set names; default every set) and
  `OUTREACH_MCP_READ_ONLY=1` (only read-only tools), for both transports;
- the request path (streamable HTTP): `/mcp/<set>[,<set>]`, `/mcp/readonly`, or both as
  `/mcp/<set>[,<set>]/readonly`;
- the request headers: `X-MCP-Toolsets: <set>[,<set>]` and `X-MCP-Readonly: 1`;
- the OAuth access token's scopes: a token granted any set names as scopes reaches only those sets, and the
  scope `readonly` only read-only tools (a token without such scopes, and an API key, reaches every set).

A tool outside the selection is neither listed nor callable: calling it is the same JSON-RPC
invalid-params error as calling a tool that does not exist.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from outreach_core.kernel.endpoint import AnyEndpoint
from outreach_core.kernel.errors import InvalidInput

READONLY = "readonly"
"""The path segment, and the OAuth scope, that leaves only read-only tools."""
TOOLSETS_HEADER = "x-mcp-toolsets"
READONLY_HEADER = "x-mcp-readonly"
SCOPE_KEY = "outreach.mcp_selection"
"""Where `ToolsetRouting` leaves the request's `Selection` in the ASGI scope."""
MCP_PATH = "/mcp"


@dataclass(frozen=True)
class Selection:
    """Which tools are reachable: the sets (None: every set) and whether only read-only tools are."""

    sets: frozenset[str] | None = None
    read_only: bool = False

    def narrow(self, other: Selection) -> Selection:
        """Both selections at once (each may only take away)."""
        if self.sets is None:
            sets = other.sets
        elif other.sets is None:
            sets = self.sets
        else:
            sets = self.sets & other.sets
        return Selection(sets, self.read_only or other.read_only)

    def allows(self, endpoint: AnyEndpoint) -> bool:
        if self.read_only and not endpoint.read_only:
            return False
        return self.sets is None or endpoint.toolset_name in self.sets


class UnknownToolset(InvalidInput):
    """A set name that no tool has (in the settings: `outreach serve` and `outreach mcp` print it as one line
    of the service's error body and exit 1)."""

    def __init__(self, unknown: list[str], known: Iterable[str]) -> None:
        self.unknown = unknown
        self.known = sorted(known)
        super().__init__(
            f"Unknown tool set(s): {', '.join(unknown)}. Tool sets: {', '.join(self.known)}.",
            {"unknown": unknown, "toolsets": self.known},
        )


def toolset_names(endpoints: Iterable[AnyEndpoint]) -> list[str]:
    """Every set that has at least one tool, in catalogue order."""
    names: list[str] = []
    for endpoint in endpoints:
        if endpoint.tool and endpoint.toolset_name not in names:
            names.append(endpoint.toolset_name)
    return names


def parse_sets(text: str, known: Iterable[str]) -> frozenset[str]:
    """`"leads, campaigns"` as a set of names; a name no tool has raises `UnknownToolset`."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    known_set = set(known)
    unknown = [n for n in names if n not in known_set]
    if unknown:
        raise UnknownToolset(unknown, known_set)
    return frozenset(names)


def server_selection(toolsets: list[str] | None, read_only: bool, known: Iterable[str]) -> Selection:
    """The server-wide selection from the settings (`OUTREACH_MCP_TOOLSETS`, `OUTREACH_MCP_READ_ONLY`)."""
    sets = parse_sets(",".join(toolsets), known) if toolsets is not None else None
    return Selection(sets, read_only)


def scope_selection(scopes: Iterable[str], known: Iterable[str]) -> Selection:
    """What an OAuth token's scopes allow: its set-name scopes (all sets when it has none), `readonly`."""
    held = set(scopes)
    sets = frozenset(held & set(known))
    return Selection(sets or None, READONLY in held)


def _truthy(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


class ToolsetRouting:
    """ASGI wrapper in front of the MCP app: `/mcp/<sets>[/readonly]` is served as `/mcp` with the
    selection of the path and of the `X-MCP-Toolsets`/`X-MCP-Readonly` headers left in the scope. An
    unknown set name is answered 404 (path) or 400 (header) with the service's error body, naming the
    sets there are."""

    def __init__(self, app: ASGIApp, known: Iterable[str]) -> None:
        self.app = app
        self.known = list(known)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not (path == MCP_PATH or path.startswith(MCP_PATH + "/")):
            await self.app(scope, receive, send)
            return
        try:
            selection = self._path_selection(scope["path"][len(MCP_PATH) :])
        except UnknownToolset as exc:
            await _error(send, 404, exc)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            if TOOLSETS_HEADER in headers:
                selection = selection.narrow(Selection(parse_sets(headers[TOOLSETS_HEADER], self.known)))
        except UnknownToolset as exc:
            await _error(send, 400, exc)
            return
        if _truthy(headers.get(READONLY_HEADER, "")):
            selection = selection.narrow(Selection(read_only=True))
        scope = {**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode(), SCOPE_KEY: selection}
        await self.app(scope, receive, send)

    def _path_selection(self, rest: str) -> Selection:
        parts = [p for p in rest.split("/") if p]
        read_only = bool(parts) and parts[-1] == READONLY
        if read_only:
            parts = parts[:-1]
        if len(parts) > 1 or rest.endswith("//"):
            raise UnknownToolset(["/".join(parts)], self.known)
        sets = parse_sets(parts[0], self.known) if parts else None
        if parts and not sets:
            raise UnknownToolset([parts[0]], self.known)
        return Selection(sets, read_only)


async def _error(send: Send, status: int, exc: UnknownToolset) -> None:
    body = json.dumps(
        {
            "error": {
                "code": "not_found" if status == 404 else "invalid_input",
                "message": exc.message,
                "details": {"unknown": exc.unknown, "toolsets": exc.known},
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def request_selection(request: Any, known: Iterable[str]) -> Selection:
    """The selection of one HTTP request: its path and headers (`ToolsetRouting`) and, for an OAuth access
    token, its scopes. None for stdio."""
    if request is None:
        return Selection()
    selection = request.scope.get(SCOPE_KEY) or Selection()
    user = request.scope.get("user")
    access_token = getattr(user, "access_token", None)
    scopes = getattr(access_token, "scopes", None) or []
    return selection.narrow(scope_selection(scopes, known)) if scopes else selection


def instructions(endpoints: Iterable[AnyEndpoint]) -> str:
    """The server instructions for the tools a session can reach: the sets named are exactly theirs."""
    reachable = list(endpoints)
    sets = toolset_names(reachable)
    if not reachable:
        return "No tools are available with this selection of tool sets."
    only_reads = all(e.read_only for e in reachable)
    lines = [
        f"Tools of a cold-email outreach workspace, in {len(sets)} tool set{'s' if len(sets) != 1 else ''}: "
        f"{', '.join(sets)}" + (" (read-only tools only)." if only_reads else "."),
        "Every tool acts inside the workspace of the credential you connected with; ids of other workspaces "
        "are reported as not found.",
        'Errors come back as {"error": {"code", "message", "details"}}.',
    ]
    if any(e.confirm is not None for e in reachable):
        lines.append("Tools that change or delete a lot ask the person to confirm first.")
    return " ".join(lines)
