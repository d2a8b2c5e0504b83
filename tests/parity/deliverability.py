"""REST/MCP parity cases and foreign cases of deliverability (the domain checker and sending domains) on the
session server. The domains are unique names that the session's DNS server does not know (each check
finds nothing, quickly); `tests/deliverability/` checks real records."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, parity_name


def _domain() -> str:
    return f"{parity_name()}.com"


async def _added(http: httpx.AsyncClient, ws: WorkspaceHandle) -> str:
    domain = _domain()
    response = await http.post("/api/v1/domains", headers=ws.headers, json={"domain": domain})
    assert response.status_code == 200, response.text
    return domain


async def check_domain_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"domain": _domain()},
        {"domain": f"https://www.{_domain()}/about", "selector": "s2024"},
        {"domain": "co.uk"},
        {"domain": "127.0.0.1"},
    ]


async def list_domains_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    await _added(http, ws)
    return [{}]


async def add_domain_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"domain": _domain()}, {"domain": "localhost"}, {}]


async def check_sending_domain_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"domain": await _added(http, ws)}, {"domain": _domain()}]


async def delete_domain_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    domain = await _added(http, ws)
    return [{"domain": domain}, {"domain": domain}, {"domain": "co.uk"}]


CASES: dict[str, Prepare] = {
    "check_domain": check_domain_args,
    "list_domains": list_domains_args,
    "add_domain": add_domain_args,
    "check_sending_domain": check_sending_domain_args,
    "delete_domain": delete_domain_args,
}


async def their_domain_untouched(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """They have a sending domain; checking or adding another domain, or listing mine, shows and changes
    nothing of theirs."""
    await _added(http, theirs)
    return [{"domain": _domain()}]


async def their_domains_hidden(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    await _added(http, theirs)
    return [{}]


async def their_domain_named(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their sending domain, named in my workspace: not one of mine (404, before any lookup)."""
    return [{"domain": await _added(http, theirs)}]


FOREIGN: dict[str, Foreign] = {
    "check_domain": their_domain_untouched,
    "list_domains": their_domains_hidden,
    "add_domain": their_domain_untouched,
    "check_sending_domain": their_domain_named,
    "delete_domain": their_domain_named,
}
