"""The link domain through REST, as a user sees it: every state with what to do next, against the session's
dnslib server (CNAME records) and real TLS handshakes to a loopback server with trustme certificates."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from outreach_app.adapters import DnspythonResolver
from outreach_core.link_domain.endpoints import ENDPOINTS
from outreach_core.link_domain.operations import check_link_domain
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.link_domain.conftest import TARGET, LinkEnv, make_runtime
from tests.mailboxes.helpers import seed_mailbox

API = "/api/v1"


def host(ws: WorkspaceHandle, label: str = "links") -> str:
    return f"{label}.{ws.slug}.example.com"


async def put(http: httpx.AsyncClient, ws: WorkspaceHandle, **body: Any) -> httpx.Response:
    return await http.put(f"{API}/link-domain", headers=ws.headers, json=body)


async def get(http: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, Any]:
    shown = await http.get(f"{API}/link-domain", headers=ws.headers)
    assert shown.status_code == 200, shown.text
    return shown.json()  # type: ignore[no-any-return]


async def check(http: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, Any]:
    checked = await http.post(f"{API}/link-domain/check", headers=ws.headers)
    assert checked.status_code == 200, checked.text
    return checked.json()  # type: ignore[no-any-return]


async def test_nothing_set_suggests_links_of_the_sending_domain(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    shown = await get(link_http, ws)
    assert shown["status"] == "none" and shown["hostname"] is None and shown["record"] is None
    assert shown["required"] is False and shown["tls"] == "none" and shown["suggestion"] is None
    assert "PUT /api/v1/link-domain" in shown["message"]
    saved = await link_http.post(
        f"{API}/onboarding/save",
        headers=ws.headers,
        json={"sendingDomain": "acme-widgets.com", "expectedVolume": 1000},
    )
    assert saved.status_code == 200, saved.text
    assert (await get(link_http, ws))["suggestion"] == "links.acme-widgets.com"


async def test_the_suggestion_follows_the_mailboxes_own_domain(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    await seed_mailbox(ws, "ann@gmail.com")
    await seed_mailbox(ws, "bob@gmail.com")  # free mail: nobody can add records under gmail.com
    await seed_mailbox(ws, "cid@sales.acme-widgets.co.uk")
    assert (await get(link_http, ws))["suggestion"] == "links.sales.acme-widgets.co.uk"
    await put(link_http, ws, hostname=host(ws))
    assert (await get(link_http, ws))["suggestion"] is None  # only while nothing is set


@pytest.mark.parametrize(
    ("hostname", "why"),
    [
        ("example.com", "whole domain"),
        ("co.uk", "public suffix"),
        ("github.io", "public suffix"),
        ("someone.github.io", "whole domain"),
        ("127.0.0.1", "IP address"),
        ("[::1]", "IP address"),
        ("localhost", "local host name"),
        ("links.localhost", "local host name"),
        ("links.intranet", "public domain suffix"),
        ("a" * 64 + ".example.com", "63"),
        ("links.-bad-.example.com", "63"),
        ("links.exa mple.com", "valid host name"),
        ("links.xn--zz.example.com", "IDNA"),
        ("links.\u2603.example.com", "not allowed"),
        (("a" * 60 + ".") * 4 + "example.com", "253"),
    ],
)
async def test_bad_host_names_are_refused_with_the_field(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, hostname: str, why: str
) -> None:
    ws = await make_workspace()
    refused = await put(link_http, ws, hostname=hostname)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == "invalid_input"
    fields = error["details"]["fields"]
    assert [f["path"] for f in fields] == ["hostname"]
    assert why.lower() in fields[0]["message"].lower() or "253" in fields[0]["message"]
    assert (await get(link_http, ws))["status"] == "none"  # nothing stored


async def test_international_names_are_stored_as_a_labels(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    saved = await put(link_http, ws, hostname=f"Liens.{ws.slug}-Bücher.de.")
    assert saved.status_code == 200, saved.text
    stored = saved.json()["hostname"]
    assert stored.startswith("liens.xn--") and stored.endswith(".de") and stored.isascii()
    assert saved.json()["record"]["name"] == stored


async def test_from_pending_dns_to_active(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, link_env: LinkEnv
) -> None:
    ws = await make_workspace()
    name = host(ws)
    saved = await put(link_http, ws, hostname=name)
    assert saved.status_code == 200, saved.text
    body = saved.json()
    assert body["status"] == "pending_dns" and body["dns"] == "missing" and body["tls"] == "none"
    assert body["record"] == {"type": "CNAME", "name": name, "value": TARGET}
    assert f"CNAME record from {name} to {TARGET}" in body["message"]
    assert body["suggestion"] is None and body["verifiedAt"] is None and body["checkedAt"]

    link_env.publish(name, cname="somewhere-else.example.net")
    wrong = await check(link_http, ws)
    assert wrong["status"] == "pending_dns" and wrong["dns"] == "wrong"
    assert "somewhere-else.example.net" in wrong["message"]

    link_env.publish(name)  # the CNAME is right; the proxy has no certificate for it yet
    waiting = await check(link_http, ws)
    assert waiting["status"] == "pending_tls" and waiting["dns"] == "ok" and waiting["tls"] == "pending"
    assert "waiting for the certificate" in waiting["message"]
    tls_ask = await link_http.get("/tls/ask", params={"domain": name})
    assert tls_ask.status_code == 200  # the proxy may now get a certificate for it

    link_env.tls.present(name)
    active = await check(link_http, ws)
    assert active["status"] == "active" and active["tls"] == "active" and active["message"] is None
    assert active["verifiedAt"] is not None
    assert await get(link_http, ws) == active


@pytest.mark.parametrize(("kind", "said"), [("wrong_name", "another name"), ("expired", "expired")])
async def test_a_refused_certificate_is_not_active(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, link_env: LinkEnv, kind: Any, said: str
) -> None:
    ws = await make_workspace()
    name = host(ws)
    link_env.publish(name)
    link_env.tls.present(name, kind)
    await put(link_http, ws, hostname=name)
    shown = await check(link_http, ws)
    assert shown["status"] == "pending_tls" and shown["dns"] == "ok" and shown["tls"] == "failed"
    assert said in shown["message"] and "reverse proxy" in shown["message"]


async def test_replacing_an_active_link_domain_needs_replace(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, link_env: LinkEnv
) -> None:
    ws = await make_workspace()
    first, second = host(ws), host(ws, "go")
    link_env.publish(first)
    link_env.tls.present(first)
    await put(link_http, ws, hostname=first)
    assert (await check(link_http, ws))["status"] == "active"

    refused = await put(link_http, ws, hostname=second)
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "conflict"
    assert "replace" in refused.json()["error"]["message"]
    assert (await get(link_http, ws))["hostname"] == first  # unchanged

    again = await put(link_http, ws, hostname=first)  # the same host name: checked again, no replace needed
    assert again.status_code == 200 and again.json()["status"] == "active"

    replaced = await put(link_http, ws, hostname=second, replace=True)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["hostname"] == second and replaced.json()["status"] == "pending_dns"
    assert (await link_http.get("/tls/ask", params={"domain": first})).status_code == 404


async def test_a_pending_link_domain_is_replaced_freely_and_deleted(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    assert (await put(link_http, ws, hostname=host(ws))).status_code == 200
    moved = await put(link_http, ws, hostname=host(ws, "go"))
    assert moved.status_code == 200 and moved.json()["hostname"] == host(ws, "go")
    deleted = await link_http.delete(f"{API}/link-domain", headers=ws.headers)
    assert deleted.status_code == 200 and deleted.json() == {"ok": True}
    assert (await get(link_http, ws))["status"] == "none"


async def test_a_host_name_belongs_to_one_workspace(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    assert (await put(link_http, mine, hostname=host(mine))).status_code == 200
    taken = await put(link_http, theirs, hostname=host(mine))
    assert taken.status_code == 409
    assert "another workspace" in taken.json()["error"]["message"]
    assert mine.workspace_id not in taken.text and mine.slug in taken.text  # the name they sent, nothing else


async def test_members_read_and_check_but_only_admins_change(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    member, admin = await ws.add_member("member"), await ws.add_member("admin")
    refused = await put(link_http, member, hostname=host(ws))
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert (await put(link_http, admin, hostname=host(ws))).status_code == 200
    assert (await get(link_http, member))["hostname"] == host(ws)
    assert (await check(link_http, member))["hostname"] == host(ws)
    assert (await link_http.delete(f"{API}/link-domain", headers=member.headers)).status_code == 403


async def test_check_link_looks_at_links_of_the_domain(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, link_env: LinkEnv
) -> None:
    ws = await make_workspace()
    domain = f"{ws.slug}.example.com"
    before = await link_http.get(f"{API}/check/link", headers=ws.headers, params={"domain": domain})
    assert before.status_code == 200
    assert before.json() == {"hostname": f"links.{domain}", "target": TARGET, "dns": "missing"}
    link_env.publish(f"links.{domain}")
    for given in (domain, f"Someone@{domain.upper()}", f"https://{domain}/pricing"):
        after = await link_http.get(f"{API}/check/link", headers=ws.headers, params={"domain": given})
        assert after.json() == {"hostname": f"links.{domain}", "target": TARGET, "dns": "ok"}
    for bad in ("co.uk", "192.0.2.1", "localhost", "x" * 301):
        refused = await link_http.get(f"{API}/check/link", headers=ws.headers, params={"domain": bad})
        assert refused.status_code == 422
        assert [f["path"] for f in refused.json()["error"]["details"]["fields"]] == ["domain"]
    assert (await get(link_http, ws))["status"] == "none"  # a DNS check saves nothing


async def test_dns_that_does_not_answer_is_unknown_never_wrong(
    link_http: httpx.AsyncClient, make_workspace: MakeWorkspace, link_env: LinkEnv
) -> None:
    """A resolver that does not answer is `unknown` with the reason, and changes no verdict: an active link
    domain stays active."""
    ws = await make_workspace()
    name = host(ws)
    link_env.publish(name)
    link_env.tls.present(name)
    await put(link_http, ws, hostname=name)
    assert (await check(link_http, ws))["status"] == "active"

    silent = make_runtime(link_env.runtime, link_env.dns, link_env.tls, link_check_timeout_s=1.0)
    silent.ports.dns = DnspythonResolver("127.0.0.1:9", timeout_s=0.3)  # nothing listens there
    endpoint = next(e for e in ENDPOINTS if e.operation is check_link_domain)
    shown = await silent.call(await ws.principal(), endpoint)
    assert (shown.status, shown.dns, shown.tls) == ("active", "unknown", "active")

    other = await make_workspace()
    await put(link_http, other, hostname=host(other))
    pending = await silent.call(await other.principal(), endpoint)
    assert (pending.status, pending.dns) == ("pending_dns", "unknown")
    assert "could not be read" in (pending.message or "")
