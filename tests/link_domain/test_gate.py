"""What a link domain's host serves (only links: the API and MCP answer 404 there), the reverse proxy's
`/tls/ask`, and the launch checklist's link-domain items, seen from a real HTTP client."""

from __future__ import annotations

import httpx

from outreach_core.campaigns.lifecycle import get_launch_checklist
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.link_domain.conftest import LinkEnv, make_runtime

API = "/api/v1"


async def _active(http: httpx.AsyncClient, env: LinkEnv, ws: WorkspaceHandle, label: str = "links") -> str:
    name = f"{label}.{ws.slug}.example.com"
    env.publish(name)
    env.tls.present(name)
    assert (
        await http.put(f"{API}/link-domain", headers=ws.headers, json={"hostname": name})
    ).status_code == 200
    checked = await http.post(f"{API}/link-domain/check", headers=ws.headers)
    assert checked.json()["status"] == "active", checked.text
    return name


async def test_a_link_domain_serves_only_links(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, link_env: LinkEnv
) -> None:
    ws = await make_workspace()
    name = await _active(link_http, link_env, ws)
    on_link_host = {"Host": f"{name}:443", **ws.headers}

    for method, path in (
        ("GET", f"{API}/ping"),
        ("GET", f"{API}/link-domain"),
        ("GET", f"{API}/openapi.json"),
        ("POST", "/mcp"),
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/tls/ask"),
        ("GET", "/"),
    ):
        refused = await link_http.request(method, path, headers=on_link_host)
        assert refused.status_code == 404, (path, refused.text)
        assert refused.json()["error"]["code"] == "not_found"
        assert "link domain" in refused.json()["error"]["message"]

    # the unsubscribe path is served (a forged token gets the unsubscribe page's own answer)
    unsubscribe = await link_http.get("/u/not-a-real-token", headers={"Host": name})
    assert unsubscribe.status_code == 404 and "unsubscribe link is not valid" in unsubscribe.text
    for path in ("/l/not-a-token", "/o/not-a-token"):  # tracking (another module) is let through
        passed = await link_http.get(path, headers={"Host": name.upper() + "."})
        assert "link domain; it serves only" not in passed.text

    # the same requests on the service's own address are the API as usual
    assert (await link_http.get(f"{API}/link-domain", headers=ws.headers)).json()["hostname"] == name


async def test_a_host_name_whose_dns_is_not_here_is_not_gated_nor_certified(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    name = f"links.{ws.slug}.example.com"
    await link_http.put(f"{API}/link-domain", headers=ws.headers, json={"hostname": name})
    assert (await link_http.get(f"{API}/ping", headers={"Host": name})).status_code == 200
    assert (await link_http.get("/tls/ask", params={"domain": name})).status_code == 404


async def test_tls_ask_says_yes_only_for_link_domains(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, link_env: LinkEnv
) -> None:
    ws = await make_workspace()
    name = await _active(link_http, link_env, ws)
    assert (await link_http.get("/tls/ask", params={"domain": name})).status_code == 200
    assert (await link_http.get("/tls/ask", params={"domain": name.upper() + "."})).status_code == 200
    for other in ("", "example.com", f"x.{name}", "127.0.0.1", "a" * 400, "bad host"):
        assert (await link_http.get("/tls/ask", params={"domain": other})).status_code == 404, other
    assert (await link_http.get("/tls/ask")).status_code == 404
    await link_http.delete(f"{API}/link-domain", headers=ws.headers)
    assert (await link_http.get("/tls/ask", params={"domain": name})).status_code == 404


async def _checklist(rt: Runtime, ws: WorkspaceHandle, campaign_id: str) -> dict[str, dict[str, object]]:
    items = await rt.read(await ws.principal(), get_launch_checklist, campaign_id)
    return {i.id: i.model_dump(by_alias=True) for i in items.items}


async def test_the_checklist_items_follow_the_link_domain(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, link_env: LinkEnv
) -> None:
    ws = await make_workspace()
    created = await link_http.post(f"{API}/campaigns", headers=ws.headers, json={"name": "Links"})
    campaign = created.json()["id"]
    await link_http.patch(f"{API}/campaigns/{campaign}", headers=ws.headers, json={"trackClicks": True})
    required = make_runtime(link_env.runtime, link_env.dns, link_env.tls, link_domain_required=True)
    optional = link_env.runtime

    before = await _checklist(required, ws, campaign)
    assert before["link_domain"]["required"] is True and before["link_domain"]["ok"] is False
    assert before["link_domain"]["label"] == "An active link domain"
    assert "set_link_domain" in str(before["link_domain"]["message"])
    assert before["tracking_link_domain"]["ok"] is False
    loose = await _checklist(optional, ws, campaign)
    assert loose["link_domain"]["ok"] is True and loose["tracking_link_domain"]["ok"] is False

    await _active(link_http, link_env, ws)
    after = await _checklist(required, ws, campaign)
    assert after["link_domain"]["ok"] is True and after["tracking_link_domain"]["ok"] is True

    await link_http.patch(f"{API}/campaigns/{campaign}", headers=ws.headers, json={"trackClicks": False})
    await link_http.delete(f"{API}/link-domain", headers=ws.headers)
    untracked = await _checklist(optional, ws, campaign)
    assert untracked["tracking_link_domain"]["ok"] is True  # no tracking: nothing to warn about
    assert (await _checklist(required, ws, campaign))["link_domain"]["ok"] is False
