"""Outgoing connections (issue 19, item 7): only globally routable addresses, checked on the address actually
connected to. Real servers on loopback: the dnslib DNS server (as `OUTREACH_DNS_NAMESERVERS`), aiosmtpd,
Dovecot and an HTTPS receiver under uvicorn with a certificate from the test CA."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from outreach_app.adapters import DnspythonResolver, MailLoginClient, SmtpMailSender
from outreach_app.adapters.http import GuardedHttpClient
from outreach_core.kernel.ports import MailServer
from tests.conftest import free_port, serving
from tests.dns_server import DnsServer
from tests.mail_servers import MailCA, MailServers, SmtpServer

HINT = "OUTREACH_ALLOW_PRIVATE_URLS=1"
NOT_GLOBAL = [
    "192.0.0.8",
    "100.64.0.1",
    "::ffff:127.0.0.1",
    "169.254.169.254",
    "64:ff9b::a00:1",
    "2002:7f00:1::",
]


class Receiver:
    """A bare ASGI app recording each request's Host header and body; answers 200 `ok`."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, bytes]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        host = dict(scope["headers"]).get(b"host", b"").decode()
        self.requests.append((host, body))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture(scope="module")
async def https_receiver(mail_ca: MailCA) -> AsyncIterator[tuple[Receiver, int]]:
    """HTTPS on 127.0.0.1 with a certificate for `api.guard.test` only (issued by the test CA)."""
    directory = Path(tempfile.mkdtemp(prefix="outreach-guard-"))
    cert = mail_ca.ca.issue_cert("api.guard.test")
    cert.private_key_pem.write_to_path(str(directory / "key.pem"))
    with (directory / "cert.pem").open("wb") as f:
        for blob in cert.cert_chain_pems:
            f.write(blob.bytes())
    receiver, port = Receiver(), free_port()
    options = {"ssl_certfile": str(directory / "cert.pem"), "ssl_keyfile": str(directory / "key.pem")}
    async with serving(receiver, port, lifespan="off", **options):
        yield receiver, port


def resolver(dns_server: DnsServer) -> DnspythonResolver:
    return DnspythonResolver(dns_server.nameservers, timeout_s=1.0)


@pytest.mark.parametrize("address", NOT_GLOBAL)
async def test_addresses_that_are_not_globally_routable_are_refused(address: str) -> None:
    logins = MailLoginClient(timeout_s=2.0)
    server = MailServer(address, 465, "tls", "someone@example.com")
    for problem in (await logins.test_smtp(server, "pw"), await logins.test_imap(server, "pw")):
        assert problem is not None and problem.startswith(f"refused: {address} is a") and HINT in problem
    http = GuardedHttpClient()
    try:
        host = f"[{address}]" if ":" in address else address
        status, body = await http.post_json(f"https://{host}/verify", b"{}", {}, 2.0)
    finally:
        await http.aclose()
    assert status == 0 and body.startswith(b"refused:")


async def test_a_name_that_resolves_to_a_private_address_is_refused_before_connecting(
    dns_server: DnsServer, mail_servers: MailServers, https_receiver: tuple[Receiver, int]
) -> None:
    dns_server.add("private-mx.guard.example.com", "A", "10.20.30.40")
    dns_server.add("loopback.guard.example.com", "A", "127.0.0.1")
    dns_server.add("mixed.guard.example.com", "A", "93.184.216.34", "127.0.0.1")  # one bad address is enough
    smtp = mail_servers.smtp["tls"]
    before = len(smtp.messages)
    logins = MailLoginClient(
        timeout_s=2.0, dns=resolver(dns_server), tls_ca_file=str(mail_servers.ca.ca_file)
    )
    for host, address, kind in [
        ("private-mx.guard.example.com", "10.20.30.40", "private"),
        ("loopback.guard.example.com", "127.0.0.1", "loopback"),
        ("mixed.guard.example.com", "127.0.0.1", "loopback"),
    ]:
        problem = await logins.test_smtp(MailServer(host, smtp.port, "tls", "u@mail.test"), "pw")
        assert problem == (
            f"refused: {host} resolves to {address}, a {kind} address, not a public one; "
            f"set {HINT} to allow private and loopback servers (tests, on-premises)"
        )

    sender = SmtpMailSender(timeout_s=2.0, dns=resolver(dns_server))
    try:
        delivery = await sender.send(
            MailServer("loopback.guard.example.com", smtp.port, "tls", "u@mail.test"), "pw", "u@mail.test",
            "lead@example.com", b"Subject: x\r\n\r\nx\r\n",
        )  # fmt: skip
    finally:
        await sender.aclose()
    assert (delivery.ok, delivery.phase) == (False, "connect") and HINT in delivery.reason
    assert len(smtp.messages) == before

    receiver, port = https_receiver
    dns_server.add("hook.guard.example.com", "A", "127.0.0.1")
    seen = len(receiver.requests)
    http = GuardedHttpClient(dns=resolver(dns_server))
    try:
        status, body = await http.post_json(f"https://hook.guard.example.com:{port}/", b"{}", {}, 2.0)
    finally:
        await http.aclose()
    assert status == 0 and body.startswith(b"refused: hook.guard.example.com resolves to 127.0.0.1")
    assert len(receiver.requests) == seen  # nothing was sent


async def test_the_connection_goes_to_the_checked_address_and_tls_checks_the_name(
    dns_server: DnsServer, mail_servers: MailServers, https_receiver: tuple[Receiver, int]
) -> None:
    """Names only our test DNS server knows: a connection that works proves the address came from the one
    resolution the guard made (the system resolver cannot find these names), and TLS checks the name."""
    receiver, port = https_receiver
    dns_server.add("api.guard.test", "A", "127.0.0.1")
    dns_server.add("alias.guard.test", "A", "127.0.0.1")
    http = GuardedHttpClient(
        allow_private_urls=True, dns=resolver(dns_server), tls_ca_file=str(mail_servers.ca.ca_file)
    )
    try:
        status, body = await http.post_json(f"https://api.guard.test:{port}/v1", b'{"a":1}', {}, 5.0)
        again = await http.post_json(f"https://api.guard.test:{port}/v1", b'{"a":2}', {}, 5.0)
        wrong_name = await http.post_json(f"https://alias.guard.test:{port}/v1", b"{}", {}, 5.0)
    finally:
        await http.aclose()
    assert (status, body) == (200, b"ok") and again == (200, b"ok")
    assert receiver.requests[-2:] == [
        (f"api.guard.test:{port}", b'{"a":1}'),
        (f"api.guard.test:{port}", b'{"a":2}'),
    ]
    assert dns_server.queries_for("api.guard.test") == 2  # one A, one AAAA: the kept connection is reused
    # the certificate is not for alias.guard.test, and the answer says so
    assert wrong_name[0] == 0 and wrong_name[1].startswith(b"TLS certificate not trusted (Hostname mismatch")

    smtp: SmtpServer = mail_servers.smtp["tls"]
    user, password = mail_servers.add_user()
    dns_server.add("smtp.guard.test", "A", "127.0.0.1")
    logins = MailLoginClient(
        timeout_s=5.0, allow_private=True, dns=resolver(dns_server), tls_ca_file=str(mail_servers.ca.ca_file)
    )
    mismatch = await logins.test_smtp(MailServer("smtp.guard.test", smtp.port, "tls", user), password)
    assert mismatch is not None and mismatch.startswith("TLS error") and "mismatch" in mismatch.lower()
    imap_mismatch = await logins.test_imap(
        MailServer("smtp.guard.test", mail_servers.imap.tls_port, "tls", user), password
    )
    assert imap_mismatch is not None and "mismatch" in imap_mismatch.lower()
    # `localhost` (the certificate's name) is the machine itself, never looked up in DNS
    assert await logins.test_smtp(MailServer("localhost", smtp.port, "tls", user), password) is None
    starttls = mail_servers.smtp["starttls"]
    assert await logins.test_smtp(MailServer("localhost", starttls.port, "starttls", user), password) is None
    assert (
        await logins.test_imap(MailServer("localhost", mail_servers.imap.tls_port, "tls", user), password)
        is None
    )
    assert (
        await logins.test_imap(
            MailServer("localhost", mail_servers.imap.starttls_port, "starttls", user), password
        )
        is None
    )
