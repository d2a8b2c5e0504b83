"""Ramp maths and sentToday with a fixed clock, detect against the loopback DNS server, encryption and key
rotation, and the password never appearing in responses, MCP results or logs."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime
from typing import Any

import httpx
import pytest

from outreach_core.kernel.crypto import UndecryptableSecret, decrypt, encrypt, reencrypt
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.mailboxes import rules
from outreach_core.mailboxes.operations import get_mailbox, list_mailboxes
from tests.conftest import MakeWorkspace
from tests.dns_server import DnsServer
from tests.doors import call_mcp
from tests.mail_servers import MailServers
from tests.mailboxes.helpers import API, create, seed_mailbox, stored_row


@pytest.mark.parametrize(
    ("daily", "enabled", "start", "inc", "day", "limit", "left"),
    [
        (30, True, 5, 2, 1, 5, 13),
        (30, True, 5, 2, 2, 7, 12),
        (30, True, 5, 2, 13, 29, 1),
        (30, True, 5, 2, 14, 30, 0),
        (30, True, 5, 2, 100, 30, 0),
        (30, False, 5, 2, 1, 30, 0),
        (3, True, 5, 2, 1, 3, 0),
        (500, True, 500, 100, 1, 500, 0),
        (100, True, 1, 100, 2, 100, 0),
    ],
)
def test_ramp(daily: int, enabled: bool, start: int, inc: int, day: int, limit: int, left: int) -> None:
    assert rules.effective_limit(daily, enabled, start, inc, day) == limit
    assert rules.ramp_days_left(daily, enabled, start, inc, day) == left


def test_days_and_sends_follow_the_mailbox_timezone() -> None:
    late_utc = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)
    assert rules.local_day(late_utc, "UTC") == date(2026, 3, 1)
    assert rules.local_day(late_utc, "Europe/Berlin") == date(2026, 3, 2)
    assert rules.local_day(late_utc, "America/Los_Angeles") == date(2026, 3, 1)
    assert rules.ramp_day("2026-03-01", date(2026, 3, 1)) == 1
    assert rules.ramp_day("2026-03-01", date(2026, 3, 11)) == 11
    assert rules.ramp_day("2026-03-05", date(2026, 3, 1)) == 1  # a clock set back never gives day 0
    assert rules.sent_today("2026-03-02", 7, date(2026, 3, 2)) == 7
    assert rules.sent_today("2026-03-01", 7, date(2026, 3, 2)) == 0
    assert rules.sent_today(None, 0, date(2026, 3, 2)) == 0


def test_mx_parsing_and_provider_lookup() -> None:
    hosts = rules.mx_hosts(["20 alt1.aspmx.l.google.com.", "10 ASPMX.L.GOOGLE.COM.", "0 .", "junk"])
    assert hosts == ["aspmx.l.google.com", "alt1.aspmx.l.google.com"]
    found = rules.provider_by_mx(hosts)
    assert found is not None and found.label == "Google Workspace"
    assert rules.provider_by_mx(["notgoogle.com"]) is None
    assert rules.provider_by_domain("gmail.com") is rules.GMAIL


async def test_computed_fields_follow_the_clock(make_workspace: MakeWorkspace, runtime: Runtime) -> None:
    ws = await make_workspace()
    clock = FixedClock(datetime(2026, 3, 1, 22, 0, tzinfo=UTC))
    rt = Runtime(runtime.settings, engine=runtime.engine, ports=Ports(clock=clock))
    principal = await ws.principal()
    mailbox_id = await seed_mailbox(ws, "clock@example.com", runtime=rt, timezone="Europe/Berlin")

    first = await rt.read(principal, get_mailbox, mailbox_id)
    assert (first.ramp_day, first.effective_limit, first.ramp_days_left) == (1, 5, 13)

    clock.advance(days=4)
    later = await rt.read(principal, get_mailbox, mailbox_id)
    assert (later.ramp_day, later.effective_limit, later.ramp_days_left) == (5, 13, 9)

    # The sender keeps (sent_day, sent_count) for the mailbox's own day: 23:30 UTC is already the next day
    # in Berlin.
    other_id = await seed_mailbox(
        ws, "sent@example.com", runtime=rt, timezone="Europe/Berlin", sent_day="2026-03-06", sent_count=9
    )
    clock.set(datetime(2026, 3, 5, 22, 30, tzinfo=UTC))  # 23:30 on the 5th in Berlin
    assert (await rt.read(principal, get_mailbox, other_id)).sent_today == 0
    clock.set(datetime(2026, 3, 5, 23, 30, tzinfo=UTC))  # 00:30 on the 6th in Berlin
    assert (await rt.read(principal, get_mailbox, other_id)).sent_today == 9
    clock.set(datetime(2026, 3, 6, 23, 30, tzinfo=UTC))
    assert (await rt.read(principal, get_mailbox, other_id)).sent_today == 0
    listed = await rt.read(principal, list_mailboxes)
    assert {m.id for m in listed.mailboxes} == {mailbox_id, other_id}


async def test_restart_ramp_starts_again_today(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    ws = await make_workspace()
    mailbox_id = await seed_mailbox(ws, "ramp@example.com", ramp_started_on="2020-01-01")
    url = f"{API}/mailboxes/{mailbox_id}"
    before = (await http.get(url, headers=ws.headers)).json()
    assert before["rampDay"] > 2000 and before["effectiveLimit"] == 30 and before["rampDaysLeft"] == 0
    after = (await http.patch(url, headers=ws.headers, json={"restartRamp": True})).json()["mailbox"]
    assert (after["rampDay"], after["effectiveLimit"], after["rampDaysLeft"]) == (1, 5, 13)
    unchanged = (await http.patch(url, headers=ws.headers, json={"restartRamp": False})).json()["mailbox"]
    assert unchanged["rampDay"] == 1


@pytest.mark.parametrize(
    ("email", "provider", "label", "smtp_host", "hint"),
    [
        ("ann@gmail.com", "google", "Gmail", "smtp.gmail.com", "https://myaccount.google.com/apppasswords"),
        ("ann@outlook.com", "microsoft", "Outlook.com", "smtp-mail.outlook.com", "account.live.com"),
        ("ann@yahoo.com", "other", "Yahoo Mail", "smtp.mail.yahoo.com", "login.yahoo.com"),
        ("ann@icloud.com", "other", "iCloud Mail", "smtp.mail.me.com", "account.apple.com"),
        ("ann@fastmail.com", "other", "Fastmail", "smtp.fastmail.com", "fastmail.com"),
    ],
)
async def test_detect_known_providers_by_domain(
    email: str,
    provider: str,
    label: str,
    smtp_host: str,
    hint: str,
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    dns_server: DnsServer,
) -> None:
    ws = await make_workspace()
    domain = email.split("@")[1]
    response = await http.get(f"{API}/mailboxes/detect", headers=ws.headers, params={"email": email})
    body = response.json()
    assert response.status_code == 200, body
    assert (body["domain"], body["provider"], body["providerLabel"]) == (domain, provider, label)
    assert body["smtp"]["host"] == smtp_host and body["imap"]["port"] == 993
    assert hint in body["passwordHint"]["url"] and body["passwordHint"]["text"]
    assert dns_server.queries_for(domain) == 0  # known by name: no lookup


@pytest.mark.parametrize(
    ("mx", "provider", "label", "smtp_host"),
    [
        (
            ["1 aspmx.l.google.com.", "5 alt1.aspmx.l.google.com."],
            "google",
            "Google Workspace",
            "smtp.gmail.com",
        ),
        (["0 {label}-com.mail.protection.outlook.com."], "microsoft", "Microsoft 365", "smtp.office365.com"),
        (["10 mx.zoho.eu.", "20 mx2.zoho.eu."], "other", "Zoho Mail (EU)", "smtp.zoho.eu"),
        (["10 in1-smtp.messagingengine.com."], "other", "Fastmail", "smtp.fastmail.com"),
        (
            ["0 smtp.secureserver.net.", "10 mailstore1.secureserver.net."],
            "other",
            "GoDaddy Workspace Email",
            "smtpout.secureserver.net",
        ),
    ],
)
async def test_detect_hosted_domains_by_mx(
    mx: list[str],
    provider: str,
    label: str,
    smtp_host: str,
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    dns_server: DnsServer,
) -> None:
    ws = await make_workspace()
    name = f"detect-{label.split()[0].lower()}-{id(mx)}"
    domain = f"{name}.test"
    dns_server.add(domain, "MX", *(m.format(label=name) for m in mx))
    body = (
        await http.get(f"{API}/mailboxes/detect", headers=ws.headers, params={"email": f"a@{domain}"})
    ).json()
    assert (body["provider"], body["providerLabel"], body["smtp"]["host"]) == (provider, label, smtp_host)


async def test_detect_unknown_and_missing_mail_servers(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    dns_server.add("own-mail-server.test", "MX", "10 mail.own-mail-server.test.")
    own = (
        await http.get(
            f"{API}/mailboxes/detect", headers=ws.headers, params={"email": "a@own-mail-server.test"}
        )
    ).json()
    assert own["provider"] == "other" and "mail.own-mail-server.test" in own["providerLabel"]
    assert own["smtp"] is None and own["imap"] is None and own["passwordHint"] is None
    nothing = (
        await http.get(f"{API}/mailboxes/detect", headers=ws.headers, params={"email": "a@no-mx-here.test"})
    ).json()
    assert nothing["provider"] == "none" and nothing["smtp"] is None
    bad = await http.get(f"{API}/mailboxes/detect", headers=ws.headers, params={"email": "nope"})
    assert bad.status_code == 422 and bad.json()["error"]["details"]["fields"][0]["path"] == "email"


def test_encryption_rotates_to_a_new_key(runtime: Runtime) -> None:
    old = runtime.settings.model_copy(update={"secret_key": "old-key", "secret_key_previous": None})
    token = encrypt(old, "hunter2-password")
    assert "hunter2" not in token and decrypt(old, token) == "hunter2-password"

    rotated = old.model_copy(update={"secret_key": "new-key", "secret_key_previous": "older-key, old-key"})
    assert rotated.previous_secret_keys() == ["older-key", "old-key"]
    assert decrypt(rotated, token) == "hunter2-password"
    moved = reencrypt(rotated, token)
    new_only = old.model_copy(update={"secret_key": "new-key"})
    assert decrypt(new_only, moved) == "hunter2-password"
    with pytest.raises(UndecryptableSecret):
        decrypt(new_only, token)


async def test_the_password_never_leaves_the_server(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    mcp_session: Any,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    ws = await make_workspace()
    user, password = mail_servers.add_user(password="Leak-Canary-7b1f9e")
    seen: list[str] = []

    async def rest(method: str, path: str, **kwargs: Any) -> Any:
        response = await http.request(method, f"{API}{path}", headers=ws.headers, **kwargs)
        seen.append(response.text)
        return response.json()

    created = await rest("POST", "/mailboxes", json=mail_servers.body(user, password))
    mailbox_id = created["mailbox"]["id"]
    await rest("POST", "/mailboxes/test", json=mail_servers.body(user, password))
    await rest("POST", "/mailboxes/test", json=mail_servers.body(user, password + "x"))
    await rest("GET", "/mailboxes")
    await rest("GET", f"/mailboxes/{mailbox_id}")
    await rest("POST", f"/mailboxes/{mailbox_id}/test")
    await rest("PATCH", f"/mailboxes/{mailbox_id}", json={"credentials": {"password": password + "x"}})
    await rest("PATCH", f"/mailboxes/{mailbox_id}", json={"credentials": {"password": password}})
    await rest("POST", "/mailboxes", json={**mail_servers.body(user, password), "dailyLimit": 0})
    row = mail_servers.body(user, password)
    del row["provider"]
    await rest("POST", "/mailboxes/import", json={"rows": [row, {**row, "email": "x@mail.test"}]})
    async with mcp_session(ws.api_key) as client:
        for tool, args in [
            ("list_mailboxes", {}),
            ("get_mailbox", {"id": mailbox_id}),
            ("retest_mailbox", {"id": mailbox_id}),
            ("test_mailbox", mail_servers.body(user, password)),
            ("create_mailbox", {**mail_servers.body(user, password), "dailyLimit": 900}),
            ("update_mailbox", {"id": mailbox_id, "credentials": {"password": password + "x"}}),
        ]:
            _, result = await call_mcp(client, tool, args)
            seen.append(str(result))
        tools = await client.list_tools()
        seen.append(str(tools))
    out, err = capfd.readouterr()
    # The test's own MCP client logs the arguments it sends (the password among them): not the server.
    server_logs = [r.getMessage() for r in caplog.records if not r.name.startswith("mcp.client")]
    seen += [*server_logs, out, *(line for line in err.splitlines() if "Sending client message" not in line)]
    assert len(seen) > 10
    for text in seen:
        assert "Leak-Canary" not in text
    assert "Leak-Canary" not in str(await stored_row(ws, mailbox_id))
    await create(http, ws, {})  # still answers
