"""Sending domains through a real HTTP client (issue 27, scope item 2): adding and checking again with
history, deleting (409 while a mailbox uses the domain), a connected mailbox's domain checked by the
`domains` worker and shown on the mailbox, and the launch checklist's warning for a domain at D or F."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from outreach_core.deliverability.store import register_sending_domains
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from tests.campaigns.helpers import add_mailbox
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.deliverability.zones import GOOGLE_MX, bare, good, txt
from tests.dns_server import DnsServer
from tests.mail_servers import MailServers
from workers import domains as domains_worker


async def domains_of(api: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, dict[str, Any]]:
    response = await api.get("/domains", headers=ws.headers)
    assert response.status_code == 200, response.text
    return {item["domain"]: item for item in response.json()}


async def drain(runtime: Runtime) -> None:
    while await domains_worker.tick(runtime, batch=200):
        pass


async def test_add_check_again_and_history(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = bare(dns_server)
    added = await api.post("/domains", headers=ws.headers, json={"domain": f"https://{domain}/"})
    assert added.status_code == 200, added.text
    first = added.json()
    assert first["domain"] == domain and first["grade"] == "F"
    assert all(c["fix"] for c in first["checks"] if c["status"] == "fail")
    item = (await domains_of(api, ws))[domain]
    assert item["mailboxes"] == 0 and item["history"] == [] and item["report"]["score"] == first["score"]

    # the person publishes what the report said, and checks again: no cache, the old score in the history
    dns_server.add(domain, "MX", f"1 {GOOGLE_MX}.")
    dns_server.add(domain, "TXT", txt("v=spf1 include:_spf.google.com ~all"))
    dns_server.add(f"_dmarc.{domain}", "TXT", txt(f"v=DMARC1; p=none; rua=mailto:d@{domain}"))
    again = await api.post("/domains/check", headers=ws.headers, json={"domain": domain.upper()})
    assert again.status_code == 200, again.text
    second = again.json()
    assert second["cached"] is False and second["score"] > first["score"]
    item = (await domains_of(api, ws))[domain]
    assert item["report"]["checkedAt"] == second["checkedAt"]
    assert item["history"] == [{"score": first["score"], "checkedAt": first["checkedAt"]}]

    for _ in range(32):
        assert (
            await api.post("/domains/check", headers=ws.headers, json={"domain": domain})
        ).status_code == 200
    history = (await domains_of(api, ws))[domain]["history"]
    assert len(history) == 30
    assert [h["checkedAt"] for h in history] == sorted(h["checkedAt"] for h in history)
    assert history[0]["checkedAt"] > first["checkedAt"]  # the oldest went first


async def test_checking_a_domain_that_is_not_a_sending_domain_is_404_without_lookups(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws, theirs = await make_workspace(), await make_workspace()
    domain = good(dns_server)
    assert (await api.post("/domains", headers=theirs.headers, json={"domain": domain})).status_code == 200
    asked = dns_server.queries_for(domain)
    response = await api.post("/domains/check", headers=ws.headers, json={"domain": domain})
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert dns_server.queries_for(domain) == asked
    assert domain not in await domains_of(api, ws)


async def test_delete_refused_while_a_mailbox_uses_the_domain(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    used, unused = good(dns_server), good(dns_server)
    for domain in (used, unused):
        assert (await api.post("/domains", headers=ws.headers, json={"domain": domain})).status_code == 200
    await add_mailbox(ws, f"ann@{used}")
    refused = await api.delete(f"/domains/{used}", headers=ws.headers)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "conflict"
    assert refused.json()["error"]["details"] == {"domain": used, "mailboxes": 1}
    listed = await domains_of(api, ws)
    assert listed[used]["mailboxes"] == 1 and listed[used]["report"] is not None

    assert (await api.delete(f"/domains/{unused.upper()}", headers=ws.headers)).json() == {"ok": True}
    assert unused not in await domains_of(api, ws)
    assert (await api.delete(f"/domains/{unused}", headers=ws.headers)).status_code == 404
    # a path names a sending domain or nothing: text that is no domain at all is not found either
    for bad in ("co.uk", "0", "localhost", "x" * 400):
        assert (await api.delete(f"/domains/{bad}", headers=ws.headers)).status_code == 404
    # a mailbox's domain under no public suffix (an on-premises name) can be deleted once unused
    box = await add_mailbox(ws, "dee@mail.internal")

    async def register(ctx: WorkspaceContext) -> None:
        await register_sending_domains(ctx, ["mail.internal"])

    await ws.runtime.execute(await ws.principal(), register)
    assert (await api.delete("/domains/mail.internal", headers=ws.headers)).status_code == 409
    assert (await api.delete(f"/mailboxes/{box}", headers=ws.headers)).status_code == 200
    assert (await api.delete("/domains/mail.internal", headers=ws.headers)).json() == {"ok": True}


async def test_a_connected_mailbox_makes_its_domain_a_sending_domain(
    api: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    dns_server: DnsServer,
    mail_servers: MailServers,
    runtime: Runtime,
) -> None:
    ws = await make_workspace()
    domain = good(dns_server)
    user, password = mail_servers.add_user(f"ann@{domain}")
    created = await api.post("/mailboxes", headers=ws.headers, json=mail_servers.body(user, password))
    assert created.status_code == 200 and created.json()["test"]["ok"], created.text
    box = created.json()["mailbox"]
    assert box["dns"] == {
        "score": None,
        "grade": None,
        "checkedAt": None,
        "badges": {"mx": None, "spf": None, "dkim": None, "dmarc": None, "blacklists": None},
    }
    item = (await domains_of(api, ws))[domain]
    assert item["mailboxes"] == 1 and item["report"] is None  # due for the worker's first check

    await drain(runtime)
    item = (await domains_of(api, ws))[domain]
    assert item["report"]["grade"] == "A" and item["history"] == []
    shown = (await api.get(f"/mailboxes/{box['id']}", headers=ws.headers)).json()["dns"]
    assert (
        shown["score"] == 100 and shown["grade"] == "A" and shown["checkedAt"] == item["report"]["checkedAt"]
    )
    assert shown["badges"] == {
        "mx": "pass",
        "spf": "pass",
        "dkim": "pass",
        "dmarc": "pass",
        "blacklists": "info",
    }
    listed = (await api.get("/mailboxes", headers=ws.headers)).json()["mailboxes"]
    assert listed[0]["dns"] == shown

    # checked again only a day later (the worker's clock is moved, nothing else)
    await drain(runtime)
    assert (await domains_of(api, ws))[domain]["report"]["checkedAt"] == item["report"]["checkedAt"]
    dns_server.remove(f"_dmarc.{domain}", "TXT")
    later = Runtime(
        runtime.settings,
        engine=runtime.engine,
        ports=Ports(clock=FixedClock(datetime.now(UTC) + timedelta(hours=25)), dns=runtime.ports.dns),
    )
    await drain(later)
    after = (await domains_of(api, ws))[domain]
    assert after["report"]["checkedAt"] > item["report"]["checkedAt"]
    assert after["history"] == [{"score": 100, "checkedAt": item["report"]["checkedAt"]}]
    badges = (await api.get(f"/mailboxes/{box['id']}", headers=ws.headers)).json()["dns"]["badges"]
    assert badges["dmarc"] == "fail"


async def test_a_weak_sending_domain_warns_on_the_launch_checklist(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    weak, fine = bare(dns_server), good(dns_server)
    for domain in (weak, fine):
        assert (await api.post("/domains", headers=ws.headers, json={"domain": domain})).status_code == 200
    made = await api.post("/campaigns", headers=ws.headers, json={"name": "Outbound"})
    campaign = made.json()["id"]
    boxes = [await add_mailbox(ws, f"ann@{weak}"), await add_mailbox(ws, f"bob@{fine}")]
    patched = await api.patch(f"/campaigns/{campaign}", headers=ws.headers, json={"mailboxIds": boxes})
    assert patched.status_code == 200, patched.text

    async def item() -> dict[str, Any]:
        items = (await api.get(f"/campaigns/{campaign}/checklist", headers=ws.headers)).json()["items"]
        return next(i for i in items if i["id"] == "sending_domains")

    warning = await item()
    assert warning["ok"] is False and warning["required"] is False
    assert warning["details"] == [
        f"{weak} (grade F, score {(await domains_of(api, ws))[weak]['report']['score']})"
    ]
    assert "check_sending_domain" in warning["message"]
    await api.patch(f"/campaigns/{campaign}", headers=ws.headers, json={"mailboxIds": boxes[1:]})
    assert (await item())["ok"] is True


async def test_imported_mailboxes_make_their_domains_sending_domains(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    first, second = good(dns_server), good(dns_server)
    rows = []
    for email in (f"ann@{first}", f"bob@{first}", f"cy@{second}"):
        user, password = mail_servers.add_user(email)
        row = mail_servers.body(user, password)
        del row["provider"]
        rows.append(row)
    imported = await api.post("/mailboxes/import", headers=ws.headers, json={"rows": rows})
    assert imported.status_code == 200 and imported.json()["added"] == 3, imported.text
    listed = await domains_of(api, ws)
    assert {d: (i["mailboxes"], i["report"]) for d, i in listed.items()} == {
        first: (2, None),
        second: (1, None),
    }
