"""REST/MCP parity cases and foreign cases of the link domain on the session server (no link target is
configured there, so DNS reads `unknown`; tests/link_domain/ checks the states against real DNS and TLS)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, foreign_targets


def hostname_of(ws: WorkspaceHandle) -> str:
    """A link domain of the workspace's own (no two workspaces may hold the same host name)."""
    return f"links.{ws.slug}.example.com"


async def _set(http: httpx.AsyncClient, ws: WorkspaceHandle, hostname: str | None = None) -> None:
    body = {"hostname": hostname or hostname_of(ws)}
    saved = await http.put("/api/v1/link-domain", headers=ws.headers, json=body)
    assert saved.status_code == 200, saved.text


async def set_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"hostname": hostname_of(ws)},
        {"hostname": hostname_of(ws).upper() + "."},
        {"hostname": "example.com"},
        {"hostname": "co.uk"},
        {"hostname": "127.0.0.1"},
        {"hostname": "links.localhost"},
        {"hostname": "a" * 64 + ".example.com"},
        {"hostname": "xn--a.example.com"},
        {},
    ]


async def with_link_domain(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    await _set(http, ws)
    return [{}]


async def cname_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"domain": "example.com"},
        {"domain": "someone@example.org"},
        {"domain": "https://www.example.net/path"},
        {"domain": "co.uk"},
        {"domain": "10.0.0.1"},
        {"domain": "x" * 301},
        {},
    ]


CASES: dict[str, Prepare] = {
    "get_link_domain": with_link_domain,
    "set_link_domain": set_args,
    "delete_link_domain": with_link_domain,
    "check_link_domain": with_link_domain,
    "check_link_cname": cname_args,
}


async def _theirs(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> None:
    """Their workspace has a link domain, a lead, a list and a label."""
    await _set(http, theirs)
    await foreign_targets(http, theirs)


async def their_link_domain(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Reading, checking or removing my link domain shows and changes only mine (theirs stays set)."""
    await _theirs(http, theirs)
    return [{}]


async def their_link_domain_kept(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Setting my link domain leaves theirs as it is."""
    await _theirs(http, theirs)
    return [{"hostname": hostname_of(mine)}]


async def their_cname(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """A DNS check saves nothing and shows nothing of theirs."""
    await _theirs(http, theirs)
    return [{"domain": f"{mine.slug}.example.com"}]


FOREIGN: dict[str, Foreign] = {
    "get_link_domain": their_link_domain,
    "set_link_domain": their_link_domain_kept,
    "delete_link_domain": their_link_domain,
    "check_link_domain": their_link_domain,
    "check_link_cname": their_cname,
}
