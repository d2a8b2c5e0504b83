"""Mail server hosts in a legacy numeric IPv4 form (issue 25, item 2): the system resolver reads `127.1` or
`2130706433` as 127.0.0.1, so they were accepted and then connected to. They are refused with 422 on the
field through REST and MCP (create, test, import, credentials update), and nothing is stored. Whether the
server may connect to a well-formed host stays the login test's answer (docs/protection.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import MakeWorkspace
from tests.doors import call_mcp
from tests.mail_servers import MailServers
from tests.mailboxes.helpers import API, create, listing

LEGACY_FORMS = ["127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.000.000.001", "127.0.0.1."]
BAD_NAMES = ["a..example.com", "-mail.example.com", "mail.example.com-"]


@pytest.mark.parametrize("host", LEGACY_FORMS + BAD_NAMES)
async def test_a_mail_host_that_is_not_a_name_or_a_dotted_address_is_a_422_on_the_field(
    host: str,
    http: httpx.AsyncClient,
    mcp_session: Callable[..., Any],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
) -> None:
    ws = await make_workspace()
    user, password = mail_servers.add_user()
    good = mail_servers.body(user, password)
    bad_smtp = {**good, "smtp": {**good["smtp"], "host": host}}
    bad_imap = {**good, "imap": {**good["imap"], "host": host}}

    for path, body, field in (
        ("/mailboxes/test", bad_smtp, "smtp.host"),
        ("/mailboxes", bad_smtp, "smtp.host"),
        ("/mailboxes", bad_imap, "imap.host"),
    ):
        refused = await http.post(f"{API}{path}", headers=ws.headers, json=body)
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["code"] == "invalid_input"
        assert [f["path"] for f in error["details"]["fields"]] == [field]
        assert host in error["details"]["fields"][0]["message"]
    rows = [{k: bad_smtp[k] for k in ("email", "password", "smtp", "imap")}]
    imported = await http.post(f"{API}/mailboxes/import", headers=ws.headers, json={"rows": rows})
    assert imported.status_code == 422
    assert [f["path"] for f in imported.json()["error"]["details"]["fields"]] == ["rows.0.smtp.host"]

    async with mcp_session(ws.api_key) as client:
        for tool in ("test_mailbox", "create_mailbox"):
            failed, answer = await call_mcp(client, tool, bad_smtp)
            assert failed and answer["error"]["code"] == "invalid_input", answer
            assert [f["path"] for f in answer["error"]["details"]["fields"]] == ["smtp.host"]
    assert (await listing(http, ws))["mailboxes"] == []

    saved = await create(http, ws, good)  # the same body with the servers' real address is saved
    assert saved.status_code == 200 and saved.json()["test"]["ok"] is True, saved.text
    mailbox_id = saved.json()["mailbox"]["id"]
    credentials = {"password": password, "smtp": bad_smtp["smtp"], "imap": good["imap"]}
    patched = await http.patch(
        f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json={"credentials": credentials}
    )
    assert patched.status_code == 422, patched.text
    assert [f["path"] for f in patched.json()["error"]["details"]["fields"]] == ["credentials.smtp.host"]
    got = await http.get(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)
    assert got.json()["smtp"]["host"] == good["smtp"]["host"]
