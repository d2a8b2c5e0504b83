"""Sending IPs (issue 32 item 2): mailboxes routed through the operator's SOCKS5 proxies.

The proxy is a real SOCKS5 server on loopback whose outgoing connections leave from 127.0.0.2: the SMTP
server behind it sees that address, as a mail server sees a sending IP. Sending IPs are global (they carry
the mailboxes of every workspace), so each test removes the ones it added before it ends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from outreach_core.kernel.runtime import Runtime
from outreach_core.mailboxes.routes import add_sending_ip, list_sending_ips, remove_sending_ip
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mail_servers import MailServers
from tests.sending.helpers import add_lead, launched_campaign, rows
from tests.socks_proxy import socks_proxy
from tests.test_cli import run_cli
from workers import sender
from workers import sending_ips as sending_ips_worker


@pytest.fixture
async def clean_ips(runtime: Runtime) -> AsyncIterator[None]:
    """No sending IP before the test, none left after it (they would route other tests' mailboxes)."""
    for info in await runtime.system_read(list_sending_ips):
        await runtime.system(remove_sending_ip, info.id)
    yield
    for info in await runtime.system_read(list_sending_ips):
        await runtime.system(remove_sending_ip, info.id)


async def _connect(http: httpx.AsyncClient, ws: WorkspaceHandle, servers: MailServers) -> dict[str, Any]:
    user, password = servers.add_user()
    got = await http.post("/api/v1/mailboxes", headers=ws.headers, json=servers.body(user, password))
    assert got.status_code == 200 and got.json()["test"]["ok"], got.text
    return dict(got.json())


async def test_mailboxes_are_routed_by_capacity_and_wait_for_room(
    clean_ips: None, runtime: Runtime, http: httpx.AsyncClient, make_workspace: MakeWorkspace,
    mail_servers: MailServers,
) -> None:  # fmt: skip
    ws, other = await make_workspace(), await make_workspace()
    before = await _connect(http, ws, mail_servers)
    assert before["mailbox"]["sendingIp"] == {"route": "own", "country": None, "ip": None}
    assert before["waiting"] is False

    async with socks_proxy() as proxy:
        first = await runtime.system(add_sending_ip, proxy.url, "shared", "DE", "203.0.113.7", 2)
        a = await _connect(http, ws, mail_servers)
        b = await _connect(http, other, mail_servers)
        assert a["mailbox"]["sendingIp"] == {"route": "shared", "country": "DE", "ip": "203.0.113.7"}
        assert b["mailbox"]["sendingIp"]["route"] == "shared" and b["waiting"] is False
        full = await _connect(http, ws, mail_servers)  # the IP carries two mailboxes: no room
        assert full["waiting"] is True and full["mailbox"]["sendingIp"] == {
            "route": "waiting", "country": None, "ip": None
        }  # fmt: skip
        listed = (await http.get("/api/v1/mailboxes", headers=ws.headers)).json()["mailboxes"]
        assert [m["sendingIp"]["route"] for m in listed] == ["own", "shared", "waiting"]
        assert before["mailbox"]["id"] == listed[0]["id"]  # mailboxes routed before stay where they are

        # a second IP: the waiting mailbox is routed at once, and the workspace's next one spreads onto it
        second = await runtime.system(add_sending_ip, proxy.url, "shared", "FR", None, 5)
        routed = (await http.get(f"/api/v1/mailboxes/{full['mailbox']['id']}", headers=ws.headers)).json()
        assert routed["sendingIp"] == {"route": "shared", "country": "FR", "ip": None}
        counts = {i.id: i.mailboxes for i in await runtime.system_read(list_sending_ips)}
        assert counts == {first.id: 2, second.id: 1}

        # removing an IP moves its mailboxes to one with room, or makes them wait
        assert await runtime.system(remove_sending_ip, second.id) == 1
        again = (await http.get(f"/api/v1/mailboxes/{full['mailbox']['id']}", headers=ws.headers)).json()
        assert again["sendingIp"]["route"] == "waiting"
        await http.delete(f"/api/v1/mailboxes/{a['mailbox']['id']}", headers=ws.headers)
        assert await sending_ips_worker.tick(runtime) == 1  # the freed place goes to the waiting mailbox
        now = (await http.get(f"/api/v1/mailboxes/{full['mailbox']['id']}", headers=ws.headers)).json()
        assert now["sendingIp"]["route"] == "shared"


async def test_dedicated_ips_serve_one_workspace_within_its_allowance(
    clean_ips: None, runtime: Runtime, http: httpx.AsyncClient, make_workspace: MakeWorkspace,
    mail_servers: MailServers,
) -> None:  # fmt: skip
    pro = await make_workspace(plan="pro")  # one dedicated IP included
    growth = await make_workspace(plan="growth")  # none
    async with socks_proxy() as proxy:
        dedicated = await runtime.system(add_sending_ip, proxy.url, "dedicated", "US", "198.51.100.1", None)
        shared = await runtime.system(add_sending_ip, proxy.url, "shared", None, None, None)
        mine = await _connect(http, pro, mail_servers)
        theirs = await _connect(http, growth, mail_servers)
        assert mine["mailbox"]["sendingIp"] == {"route": "dedicated", "country": "US", "ip": "198.51.100.1"}
        assert theirs["mailbox"]["sendingIp"]["route"] == "shared"  # a dedicated IP is never shared
        billing = (await http.get("/api/v1/billing", headers=pro.headers)).json()["dedicatedIps"]
        assert (billing["included"], billing["inUse"], billing["min"]) == (1, 1, 0)
        assert (await http.get("/api/v1/billing", headers=growth.headers)).json()["dedicatedIps"][
            "inUse"
        ] == 0
        ips = {i.id: i for i in await runtime.system_read(list_sending_ips)}
        assert ips[dedicated.id].dedicated_to == pro.workspace_id and ips[shared.id].dedicated_to is None


async def test_email_goes_out_through_the_proxy_and_never_around_it(
    clean_ips: None, runtime: Runtime, http: httpx.AsyncClient, make_workspace: MakeWorkspace,
    mail_servers: MailServers,
) -> None:  # fmt: skip
    ws = await make_workspace()
    async with socks_proxy(user="relay", password="s3cret") as proxy:
        await runtime.system(add_sending_ip, proxy.url, "shared", "DE", None, None)
        box = (await _connect(http, ws, mail_servers))["mailbox"]
        server = mail_servers.smtp["starttls"]
        lead = await add_lead(ws, "ada@routed.example", first_name="Ada")
        cid = await launched_campaign(http, ws, [box["id"]], [lead])
        assert await sender.tick(runtime) >= 1
        with server.lock:
            [message] = [m for m in server.messages if "ada@routed.example" in m.rcpt_tos]
        assert message.peer == "127.0.0.2"  # the mail server saw the sending IP, not this server
        assert proxy.connects == [(server.host, server.port)]
        [send] = await rows(ws, "sends", campaign_id=cid)
        assert send.status == "sent"

        # the proxy refuses new connections: the email is not sent around it; the failure names the proxy
        proxy.refuse = True
        assert runtime.ports.smtp is not None
        await runtime.ports.smtp.aclose()  # the open connection through the proxy is closed
        other = await add_lead(ws, "bob@routed.example", first_name="Bob")
        await http.post(f"/api/v1/campaigns/{cid}/leads", headers=ws.headers, json={"leadIds": [other]})
        await _due_now(ws, box["id"])
        await sender.tick(runtime)
        with server.lock:
            assert not [m for m in server.messages if "bob@routed.example" in m.rcpt_tos]
        [failed] = [s for s in await rows(ws, "sends", campaign_id=cid) if s.status != "sent"]
        assert "sending IP's proxy" in (failed.error or ""), failed


async def _due_now(ws: WorkspaceHandle, mailbox_id: str) -> None:
    from tests.sending.helpers import update_rows

    await update_rows(ws, "mailboxes", {"next_send_at": None}, id=mailbox_id)


async def test_the_ip_commands(clean_ips: None, settings: Any) -> None:
    added = run_cli(settings, "ip", "add", "--proxy", "socks5://u:p@10.1.2.3:1080", "--kind", "shared",
                    "--country", "de", "--capacity", "3")  # fmt: skip
    assert added.returncode == 0, added.stderr
    ip_id = added.stdout.split()[0]
    assert added.stdout.startswith(f"{ip_id} shared socks5://10.1.2.3:1080 0/3 mailboxes country DE")
    assert "u:p" not in added.stdout  # the proxy's credentials are never shown
    listed = run_cli(settings, "ip", "list")
    assert listed.stdout.splitlines()[0].startswith(ip_id)
    bad = run_cli(settings, "ip", "add", "--proxy", "ftp://x:1", "--kind", "shared")
    assert bad.returncode == 1 and json.loads(bad.stderr.splitlines()[-1])["error"]["code"] == "invalid_input"
    wrong_kind = run_cli(settings, "ip", "add", "--proxy", "socks5://x:1", "--kind", "cheap")
    assert wrong_kind.returncode == 2 and "shared" in wrong_kind.stderr and "dedicated" in wrong_kind.stderr
    removed = run_cli(settings, "ip", "remove", ip_id)
    assert removed.returncode == 0 and run_cli(settings, "ip", "list").stdout == ""
    assert run_cli(settings, "ip", "remove", ip_id).returncode == 1
