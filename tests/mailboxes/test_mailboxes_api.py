"""Mailboxes over real HTTP against real SMTP (aiosmtpd) and IMAP (Dovecot) servers on loopback."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.crypto import decrypt
from outreach_core.kernel.db.tables import campaign_mailboxes, campaigns
from outreach_core.kernel.ids import new_id
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mail_servers import HOST, MailServers, closed_port
from tests.mailboxes.helpers import API, create, field_paths, listing, refused_body, seed_mailbox, stored_row


@pytest.mark.parametrize(("smtp", "imap"), [("starttls", "tls"), ("tls", "starttls")])
async def test_create_tests_both_logins_then_saves(
    smtp: Any, imap: Any, http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    user, password = mail_servers.add_user()
    response = await create(http, ws, mail_servers.body(user, password, smtp, imap, displayName="Ann Lee"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["test"] == {"ok": True, "smtp": None, "imap": None} and body["waiting"] is False
    mailbox = body["mailbox"]
    assert mailbox["email"] == user and mailbox["domain"] == "mail.test" and mailbox["provider"] == "smtp"
    assert mailbox["status"] == "active" and mailbox["statusReason"] is None
    assert mailbox["displayName"] == "Ann Lee" and mailbox["dailyLimit"] == 30
    assert (mailbox["effectiveLimit"], mailbox["rampDay"], mailbox["rampDaysLeft"]) == (5, 1, 13)
    assert mailbox["rampEnabled"] is True and (mailbox["rampStart"], mailbox["rampIncrement"]) == (5, 2)
    assert (mailbox["minGapS"], mailbox["maxGapS"], mailbox["sentToday"]) == (60, 180, 0)
    assert mailbox["timezone"] == "UTC" and mailbox["signature"] is None and mailbox["inboxPoll"] is False
    assert mailbox["smtp"] == mail_servers.smtp_settings(user, smtp)
    assert mailbox["imap"] == mail_servers.imap_settings(user, imap)
    assert mailbox["lastTestedAt"].endswith("Z") and mailbox["createdAt"].endswith("Z")
    assert mailbox["lastSyncedAt"] is None and mailbox["syncError"] is None
    assert mailbox["sendingIp"] == {"route": "own", "country": None, "ip": None}
    assert mailbox["warmup"] == {  # off, with the settings it starts with when turned on (docs/warmup.md)
        "enabled": False,
        "score": None,
        "sentToday": 0,
        "targetToday": 0,
        "target": 20,
        "rampStart": 2,
        "rampIncrement": 2,
        "replyRate": 30,
        "reason": None,
    }
    # its domain became a sending domain, not checked yet (the `domains` worker checks it: deliverability)
    badges = {"mx": None, "spf": None, "dkim": None, "dmarc": None, "blacklists": None}
    assert mailbox["dns"] == {"score": None, "grade": None, "checkedAt": None, "badges": badges}
    assert password not in response.text

    listed = await listing(http, ws)
    assert [m["id"] for m in listed["mailboxes"]] == [mailbox["id"]]
    assert listed["microsoftEnabled"] is False and listed["slotsLeft"] == 9  # growth: 10 mailboxes
    got = await http.get(f"{API}/mailboxes/{mailbox['id']}", headers=ws.headers)
    assert got.json() == mailbox

    row = await stored_row(ws, mailbox["id"])
    assert password not in row.password_encrypted
    assert decrypt(ws.runtime.settings, row.password_encrypted) == password


async def test_a_failing_login_saves_nothing_and_says_why(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    user, password = mail_servers.add_user()
    response = await create(http, ws, mail_servers.body(user, password + "-wrong"))
    assert response.status_code == 200
    body = response.json()
    assert body["mailbox"] is None and body["waiting"] is False
    assert body["test"]["ok"] is False
    assert "refused the user name or password" in body["test"]["smtp"]
    assert "refused the user name or password" in body["test"]["imap"]

    only_imap = mail_servers.body(user, password)
    only_imap["imap"]["port"] = closed_port()
    test = (await create(http, ws, only_imap)).json()["test"]
    assert test["ok"] is False and test["smtp"] is None and test["imap"].startswith("connection refused by")
    assert (await listing(http, ws))["mailboxes"] == []


async def test_wrong_security_and_untrusted_certificates_are_reported(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    user, password = mail_servers.add_user()
    body = mail_servers.body(user, password)
    body["smtp"]["port"] = mail_servers.smtp["starttls"].port
    body["smtp"]["security"] = "tls"  # a plain greeting where a TLS handshake is expected
    body["imap"]["port"] = mail_servers.imap.starttls_port
    result = (await http.post(f"{API}/mailboxes/test", headers=ws.headers, json=body)).json()
    assert result["ok"] is False
    assert result["smtp"].startswith("TLS error") and result["imap"].startswith("TLS error")


async def test_test_mailbox_saves_nothing(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    user, password = mail_servers.add_user()
    passed = await http.post(
        f"{API}/mailboxes/test", headers=ws.headers, json=mail_servers.body(user, password)
    )
    assert passed.json() == {"ok": True, "smtp": None, "imap": None}
    failed = await http.post(
        f"{API}/mailboxes/test", headers=ws.headers, json=mail_servers.body(user, "not-it")
    )
    assert failed.json()["ok"] is False
    assert (await listing(http, ws))["mailboxes"] == []


async def test_an_address_is_connected_once_per_workspace(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws, other = await make_workspace(), await make_workspace()
    user, password = mail_servers.add_user()
    assert (await create(http, ws, mail_servers.body(user, password))).json()["test"]["ok"]
    again = await create(http, ws, mail_servers.body(user.upper(), password))
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    elsewhere = await create(http, other, mail_servers.body(user, password))
    assert elsewhere.json()["mailbox"]["email"] == user


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"smtp": {"host": "smtp.example.com", "port": 465, "security": "tls", "user": "a@b.co"}}, "(root)"),
        ({"password": "x" * 65}, "(root)"),
        ({"password": ""}, "password"),
        ({"email": "not-an-email"}, "email"),
        ({"dailyLimit": 0}, "dailyLimit"),
        ({"dailyLimit": 501}, "dailyLimit"),
        ({"displayName": "x" * 121}, "displayName"),
        ({"provider": "google_oauth"}, "provider"),
        ({"unknown": 1}, "unknown"),
    ],
)
async def test_google_app_shape_is_validated(
    change: dict[str, Any], path: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    body = {"provider": "google_app", "email": "ann@gmail.com", "password": "abcd efgh ijkl mnop", **change}
    response = await http.post(f"{API}/mailboxes/test", headers=ws.headers, json=body)
    assert path in field_paths(response)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"imap": None}, "imap"),
        ({"smtp": {"host": "SMTP.EXAMPLE.COM", "port": 465, "security": "tls", "user": "u"}}, "smtp.host"),
        ({"smtp": {"host": "x" * 254, "port": 465, "security": "tls", "user": "u"}}, "smtp.host"),
        ({"smtp": {"host": "h", "port": 0, "security": "tls", "user": "u"}}, "smtp.port"),
        ({"smtp": {"host": "h", "port": 65536, "security": "tls", "user": "u"}}, "smtp.port"),
        ({"imap": {"host": "h", "port": 993, "security": "ssl", "user": "u"}}, "imap.security"),
        ({"imap": {"host": "h", "port": 993, "security": "tls", "user": ""}}, "imap.user"),
        ({"imap": {"host": "h", "port": 993, "security": "tls", "user": "u" * 321}}, "imap.user"),
        ({"password": "p" * 513}, "password"),
    ],
)
async def test_smtp_shape_is_validated(
    change: dict[str, Any], path: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    body = {**refused_body("ann@example.com"), **change}
    for route in ("/mailboxes", "/mailboxes/test"):
        assert path in field_paths(await http.post(f"{API}{route}", headers=ws.headers, json=body))


async def test_google_app_uses_gmail_servers(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    body = {"provider": "google_app", "email": "ann@gmail.com", "password": "abcd efgh ijkl mnop"}
    response = await create(http, ws, body)
    # No real Google account here: whatever the network allows, the login fails and nothing is saved.
    assert response.status_code == 200 and response.json()["mailbox"] is None
    assert response.json()["test"]["ok"] is False


async def test_import_reports_every_row(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    (a, pa), (b, pb), (c, pc), (d, _) = (mail_servers.add_user() for _ in range(4))
    assert (await create(http, ws, mail_servers.body(c, pc))).json()["test"]["ok"]

    def row(user: str, password: str, **extra: Any) -> dict[str, Any]:
        body = mail_servers.body(user, password, "tls", "starttls", **extra)
        del body["provider"]
        return body

    rows = [row(a, pa, dailyLimit=40, displayName="A"), row(b, pb), row(c, pc), row(d, "wrong"), row(a, pa)]
    response = await http.post(f"{API}/mailboxes/import", headers=ws.headers, json={"rows": rows})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["added"] == 2
    statuses = [(r["email"], r["status"]) for r in body["results"]]
    assert statuses == [(a, "added"), (b, "added"), (c, "exists"), (d, "failed"), (a, "skipped")]
    failed = body["results"][3]["error"]
    assert "SMTP:" in failed and "IMAP:" in failed and "wrong" not in failed
    assert body["results"][0]["error"] is None and body["results"][4]["error"]
    listed = {m["email"]: m for m in (await listing(http, ws))["mailboxes"]}
    assert set(listed) == {a, b, c}
    assert listed[a]["dailyLimit"] == 40 and listed[a]["displayName"] == "A"
    assert listed[a]["smtp"]["security"] == "tls" and listed[a]["imap"]["security"] == "starttls"


async def test_import_takes_1_to_200_rows(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    row = refused_body("a@example.com")
    del row["provider"]
    assert "rows" in field_paths(
        await http.post(f"{API}/mailboxes/import", headers=ws.headers, json={"rows": []})
    )
    too_many = {"rows": [row] * 201}
    assert "rows" in field_paths(
        await http.post(f"{API}/mailboxes/import", headers=ws.headers, json=too_many)
    )
    bad_row = {"rows": [{**row, "dailyLimit": 501}]}
    paths = field_paths(await http.post(f"{API}/mailboxes/import", headers=ws.headers, json=bad_row))
    assert paths == ["rows.0.dailyLimit"]


async def test_plan_mailbox_slots(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    starter = await make_workspace(plan="starter")  # 3 mailboxes
    for n in range(2):
        await seed_mailbox(starter, f"seed{n}@example.com")
    assert (await listing(http, starter))["slotsLeft"] == 1
    users = [mail_servers.add_user() for _ in range(3)]
    rows = []
    for user, password in users[:2]:
        body = mail_servers.body(user, password)
        del body["provider"]
        rows.append(body)
    refused = await http.post(f"{API}/mailboxes/import", headers=starter.headers, json={"rows": rows})
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "quota_exceeded"
    assert refused.json()["error"]["details"] == {"slotsLeft": 1, "adding": 2}

    assert (await create(http, starter, mail_servers.body(*users[2]))).json()["test"]["ok"]
    assert (await listing(http, starter))["slotsLeft"] == 0
    full = await create(http, starter, mail_servers.body(*users[0]))
    assert full.status_code == 429 and full.json()["error"]["code"] == "quota_exceeded"

    # Without an active plan, or on an unlimited plan, there is no mailbox limit (as for contacts).
    assert (await listing(http, await make_workspace(plan=None)))["slotsLeft"] is None
    assert (await listing(http, await make_workspace(plan="agency")))["slotsLeft"] is None


async def _connected(http: httpx.AsyncClient, ws: WorkspaceHandle, mail: MailServers) -> tuple[str, str, str]:
    user, password = mail.add_user()
    created = (await create(http, ws, mail.body(user, password))).json()
    assert created["test"]["ok"], created
    return created["mailbox"]["id"], user, password


async def test_update_changes_every_field(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    mailbox_id, _, _ = await _connected(http, ws, mail_servers)
    url = f"{API}/mailboxes/{mailbox_id}"
    limits = {"dailyLimit": 100, "rampEnabled": True, "rampStart": 10, "rampIncrement": 5}
    limits |= {"minGapS": 30, "maxGapS": 7200}
    patch = {
        "displayName": "Sales",
        "signature": "Ann\nAcme",
        "timezone": "europe/berlin",
        "status": "paused",
        "limits": limits,
        "inboxPoll": True,
        "restartRamp": True,
    }
    response = await http.patch(url, headers=ws.headers, json=patch)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["test"] is None
    mailbox = body["mailbox"]
    assert mailbox["displayName"] == "Sales" and mailbox["signature"] == "Ann\nAcme"
    assert mailbox["timezone"] == "Europe/Berlin" and mailbox["status"] == "paused"
    assert mailbox["inboxPoll"] is True and mailbox["rampDay"] == 1
    assert {k: mailbox[k] for k in limits} == limits
    assert (mailbox["effectiveLimit"], mailbox["rampDaysLeft"]) == (10, 18)

    cleared = (
        await http.patch(url, headers=ws.headers, json={"displayName": None, "signature": None})
    ).json()
    assert cleared["mailbox"]["displayName"] is None and cleared["mailbox"]["signature"] is None
    active = (
        await http.patch(
            url, headers=ws.headers, json={"status": "active", "limits": {**limits, "rampEnabled": False}}
        )
    ).json()
    assert active["mailbox"]["status"] == "active" and active["mailbox"]["effectiveLimit"] == 100
    assert active["mailbox"]["rampDaysLeft"] == 0
    assert (await http.patch(url, headers=ws.headers, json={})).json()["mailbox"] == active["mailbox"]


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        ({"status": "error"}, "status"),
        ({"status": "quarantined"}, "status"),
        ({"status": None}, "status"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"timezone": "x" * 65}, "timezone"),
        ({"signature": "x" * 5001}, "signature"),
        ({"displayName": "x" * 121}, "displayName"),
        ({"limits": {"dailyLimit": 50}}, "limits.rampEnabled"),
        (
            {
                "limits": {
                    "dailyLimit": 50,
                    "rampEnabled": True,
                    "rampStart": 1,
                    "rampIncrement": 1,
                    "minGapS": 90,
                    "maxGapS": 60,
                }
            },
            "limits",
        ),
        (
            {
                "limits": {
                    "dailyLimit": 501,
                    "rampEnabled": True,
                    "rampStart": 1,
                    "rampIncrement": 1,
                    "minGapS": 30,
                    "maxGapS": 60,
                }
            },
            "limits.dailyLimit",
        ),
        (
            {
                "limits": {
                    "dailyLimit": 50,
                    "rampEnabled": True,
                    "rampStart": 0,
                    "rampIncrement": 1,
                    "minGapS": 30,
                    "maxGapS": 60,
                }
            },
            "limits.rampStart",
        ),
        (
            {
                "limits": {
                    "dailyLimit": 50,
                    "rampEnabled": True,
                    "rampStart": 1,
                    "rampIncrement": 101,
                    "minGapS": 30,
                    "maxGapS": 60,
                }
            },
            "limits.rampIncrement",
        ),
        (
            {
                "limits": {
                    "dailyLimit": 50,
                    "rampEnabled": True,
                    "rampStart": 1,
                    "rampIncrement": 1,
                    "minGapS": 29,
                    "maxGapS": 60,
                }
            },
            "limits.minGapS",
        ),
        (
            {
                "limits": {
                    "dailyLimit": 50,
                    "rampEnabled": True,
                    "rampStart": 1,
                    "rampIncrement": 1,
                    "minGapS": 30,
                    "maxGapS": 7201,
                }
            },
            "limits.maxGapS",
        ),
        (
            {
                "limits": {
                    "dailyLimit": 50,
                    "rampEnabled": 1,
                    "rampStart": 1,
                    "rampIncrement": 1,
                    "minGapS": 30,
                    "maxGapS": 60,
                }
            },
            "limits.rampEnabled",
        ),
        ({"credentials": {"smtp": None}}, "credentials.password"),
        ({"restartRamp": "yes"}, "restartRamp"),
    ],
)
async def test_update_validates_every_limit(
    patch: dict[str, Any], path: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    mailbox_id = await seed_mailbox(ws, "limits@example.com")
    response = await http.patch(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json=patch)
    assert path in field_paths(response)


async def test_new_credentials_are_tested_before_anything_changes(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    mailbox_id, user, password = await _connected(http, ws, mail_servers)
    url = f"{API}/mailboxes/{mailbox_id}"
    before = (await http.get(url, headers=ws.headers)).json()

    rejected = await http.patch(
        url, headers=ws.headers, json={"displayName": "X", "credentials": {"password": "bad-new"}}
    )
    assert rejected.status_code == 200
    assert rejected.json()["test"]["ok"] is False and rejected.json()["mailbox"] == before
    assert decrypt(ws.runtime.settings, (await stored_row(ws, mailbox_id)).password_encrypted) == password

    new_password = "rotated-" + password
    mail_servers.add_user(user, new_password)
    moved = {
        "password": new_password,
        "smtp": mail_servers.smtp_settings(user, "tls"),
        "imap": mail_servers.imap_settings(user, "starttls"),
    }
    accepted = (await http.patch(url, headers=ws.headers, json={"credentials": moved})).json()
    assert accepted["test"] == {"ok": True, "smtp": None, "imap": None}
    assert accepted["mailbox"]["smtp"] == moved["smtp"] and accepted["mailbox"]["imap"] == moved["imap"]
    assert accepted["mailbox"]["lastTestedAt"] >= before["lastTestedAt"]
    assert decrypt(ws.runtime.settings, (await stored_row(ws, mailbox_id)).password_encrypted) == new_password
    assert (await http.post(f"{url}/test", headers=ws.headers)).json() == {"ok": True, "error": None}


async def test_retest_puts_a_failing_mailbox_in_error_until_it_passes(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mail_servers: MailServers
) -> None:
    ws = await make_workspace()
    mailbox_id, user, password = await _connected(http, ws, mail_servers)
    url = f"{API}/mailboxes/{mailbox_id}"
    assert (await http.post(f"{url}/test", headers=ws.headers)).json() == {"ok": True, "error": None}

    mail_servers.add_user(user, "changed-elsewhere")
    failed = (await http.post(f"{url}/test", headers=ws.headers)).json()
    assert (
        failed["ok"] is False and "SMTP: SMTP login failed" in failed["error"] and "IMAP:" in failed["error"]
    )
    mailbox = (await http.get(url, headers=ws.headers)).json()
    assert mailbox["status"] == "error" and mailbox["statusReason"] == failed["error"]

    refused = await http.patch(url, headers=ws.headers, json={"status": "active"})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "invalid_state"
    fixed = await http.patch(url, headers=ws.headers, json={"credentials": {"password": "changed-elsewhere"}})
    assert fixed.json()["mailbox"]["status"] == "active" and fixed.json()["mailbox"]["statusReason"] is None

    mail_servers.add_user(user, password)
    await http.post(f"{url}/test", headers=ws.headers)  # fails: the stored password is the other one
    mail_servers.add_user(user, "changed-elsewhere")
    assert (await http.post(f"{url}/test", headers=ws.headers)).json()["ok"] is True
    assert (await http.get(url, headers=ws.headers)).json()["status"] == "active"


async def test_delete_takes_the_mailbox_off_its_campaigns(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    mailbox_id = await seed_mailbox(ws, "gone@example.com")
    keep_id = await seed_mailbox(ws, "kept@example.com")

    async def attach(ctx: WorkspaceContext) -> str:
        campaign_id = new_id("cmp")
        now = ctx.now
        await ctx.conn.execute(
            scoped(ctx, campaigns).insert(
                {"id": campaign_id, "name": "C", "created_at": now, "updated_at": now}
            )
        )
        for mb in (mailbox_id, keep_id):
            await ctx.conn.execute(
                scoped(ctx, campaign_mailboxes).insert({"campaign_id": campaign_id, "mailbox_id": mb})
            )
        return campaign_id

    campaign_id = await ws.runtime.execute(await ws.principal(), attach)
    deleted = await http.delete(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)
    assert deleted.status_code == 200 and deleted.json() == {"ok": True}
    assert (await http.get(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)).status_code == 404
    assert (await http.delete(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)).status_code == 404

    async def attached(ctx: WorkspaceContext) -> list[str]:
        cm = scoped(ctx, campaign_mailboxes)
        stmt = cm.select(campaign_mailboxes.c.mailbox_id).where(
            campaign_mailboxes.c.campaign_id == campaign_id
        )
        return [str(x) for x in (await ctx.conn.execute(stmt)).scalars()]

    assert await ws.runtime.read(await ws.principal(), attached) == [keep_id]


async def test_refused_hosts_name_the_server(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    body = refused_body("ann@example.com")
    result = (await http.post(f"{API}/mailboxes/test", headers=ws.headers, json=body)).json()
    assert result["smtp"] == f"connection refused by {HOST}:{body['smtp']['port']}"
    assert result["imap"] == f"connection refused by {HOST}:{body['imap']['port']}"
