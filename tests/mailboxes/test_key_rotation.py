"""Key rotation covers every stored secret (`outreach keys reencrypt`, docs/mailboxes.md "Passwords at rest"):
after the command, a server holding only the new key still sends through a sending IP's proxy (its
credentials were encrypted) and refreshes a Google mailbox's OAuth token (its tokens were encrypted).

The command runs as the operator runs it, a process on the session's database; the test moves every value
back to the session's key when it ends (the other tests keep using that key)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import SystemContext, unscoped
from outreach_core.kernel.crypto import is_current
from outreach_core.kernel.db.tables import metadata, sending_ips
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.key_rotation import ENCRYPTED
from outreach_core.mailboxes.oauth_tokens import OAUTH_TOKENS
from outreach_core.mailboxes.routes import PROXY_SECRET, add_sending_ip, list_sending_ips, remove_sending_ip
from tests.conftest import MakeWorkspace
from tests.mail_servers import MailCA, MailServers
from tests.oauth_mail_servers import Google, connect_oauth, google_mailboxes, oauth_mailbox
from tests.sending.helpers import add_lead, launched_campaign, received_by, rows
from tests.socks_proxy import socks_proxy
from tests.test_cli import run_cli
from workers import sender

NEW_KEY = "the-new-secret-key-of-this-server-after-rotation"


@pytest.fixture
async def google(runtime: Runtime, mail_ca: MailCA) -> AsyncIterator[Google]:
    async with google_mailboxes(runtime, mail_ca) as configured:
        yield configured


@pytest.fixture
async def no_ips(runtime: Runtime) -> AsyncIterator[None]:
    """No sending IP before or after (they would route other tests' mailboxes)."""
    for info in await runtime.system_read(list_sending_ips):
        await runtime.system(remove_sending_ip, info.id)
    yield
    for info in await runtime.system_read(list_sending_ips):
        await runtime.system(remove_sending_ip, info.id)


def _reencrypt(settings: Settings, current: str, previous: str) -> dict[str, dict[str, Any]]:
    done = run_cli(
        settings.model_copy(update={"secret_key": current}),
        "keys",
        "reencrypt",
        OUTREACH_SECRET_KEY_PREVIOUS=previous,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: values of other tests no listed key decrypts
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines, done.stderr
    return {line["column"]: line for line in lines}


def test_every_encrypted_column_is_reencrypted() -> None:
    columns = {f"{t.name}.{c.name}" for t in metadata.tables.values() for c in t.c if "encrypted" in c.name}
    assert columns == {f"{t.name}.{name}" for t, name, _ in ENCRYPTED}


async def test_after_rotation_the_new_key_alone_sends_through_a_proxy_and_refreshes_a_token(
    no_ips: None, google: Google, runtime: Runtime, http: httpx.AsyncClient,
    make_workspace: MakeWorkspace, mail_servers: MailServers,
) -> None:  # fmt: skip
    google.provider.access_ttl_s = 60  # under the 5 minutes ahead: the next login refreshes first
    ws = await make_workspace()
    page, _ = await connect_oauth(google, ws, "kim@gmail.test")
    assert "Mailbox connected" in page.text, page.text
    oauth_box = await oauth_mailbox(google, ws, "kim@gmail.test")
    old_key = runtime.settings.resolved_secret_key()
    async with socks_proxy(user="relay", password="rotated-s3cret") as proxy:
        ip = await runtime.system(add_sending_ip, proxy.url, "shared", "DE", None, None)
        user, password = mail_servers.add_user()
        body = mail_servers.body(user, password)
        made = await http.post("/api/v1/mailboxes", headers=ws.headers, json=body)
        assert made.status_code == 200 and made.json()["test"]["ok"], made.text
        routed = made.json()["mailbox"]
        assert routed["sendingIp"]["route"] == "shared"
        ada = await add_lead(ws, "ada@rotated.example")
        bob = await add_lead(ws, "bob@rotated.example")
        await launched_campaign(http, ws, [routed["id"]], [ada])
        await launched_campaign(http, ws, [oauth_box["id"]], [bob])

        try:
            swept = _reencrypt(runtime.settings, NEW_KEY, old_key)
            assert swept["mailboxes.oauth_encrypted"]["moved"] >= 1
            assert swept["sending_ips.proxy_encrypted"]["moved"] >= 1
            assert swept["mailboxes.password_encrypted"]["moved"] >= 2
            assert oauth_box["id"] not in swept["mailboxes.oauth_encrypted"]["undecryptable"]
            again = _reencrypt(runtime.settings, NEW_KEY, old_key)  # nothing more to move
            assert again["mailboxes.oauth_encrypted"]["moved"] == 0
            assert again["sending_ips.proxy_encrypted"]["moved"] == 0

            # a server that knows only the new key
            only_new = google.runtime.settings.model_copy(
                update={"secret_key": NEW_KEY, "secret_key_previous": None}
            )
            stored_proxy = await runtime.system_read(_proxy_secret, ip.id)
            stored_tokens = (await rows(ws, "mailboxes", id=oauth_box["id"]))[0].oauth_encrypted
            assert is_current(only_new, stored_proxy, PROXY_SECRET)
            assert is_current(only_new, stored_tokens, OAUTH_TOKENS)
            assert not is_current(runtime.settings, stored_tokens, OAUTH_TOKENS)

            assert await sender.tick(Runtime(only_new, engine=runtime.engine, ports=runtime.ports)) >= 2
        finally:
            _reencrypt(runtime.settings, old_key, NEW_KEY)

    server = mail_servers.smtp["starttls"]
    with server.lock:
        [through] = [m for m in server.messages if "ada@rotated.example" in m.rcpt_tos]
    assert through.peer == "127.0.0.2" and proxy.connects  # through the proxy, with its credentials
    assert received_by(google.smtp, "bob@rotated.example")  # XOAUTH2 with a refreshed token
    assert google.provider.grants == ["authorization_code", "refresh_token"]
    assert google.smtp.xoauth2_logins.count("kim@gmail.test") == 2  # the connection test, then the send


async def _proxy_secret(ctx: SystemContext, ip_id: str) -> str:
    stmt = unscoped(sending_ips).select(sending_ips.c.proxy_encrypted).where(sending_ips.c.id == ip_id)
    return str((await ctx.conn.execute(stmt)).scalar_one())
