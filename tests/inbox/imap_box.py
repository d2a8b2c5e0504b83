"""Looking into a Dovecot mailbox from a test, as the person's own mail client would (stdlib imaplib over
implicit TLS, trusting the test CA), run in a thread so the event loop keeps serving."""

from __future__ import annotations

import asyncio
import imaplib
import re
import ssl

from tests.mail_servers import Dovecot, MailCA


def _client(dovecot: Dovecot, ca: MailCA, user: str, password: str) -> imaplib.IMAP4_SSL:
    context = ssl.create_default_context(cafile=str(ca.ca_file))
    client = imaplib.IMAP4_SSL(dovecot.host, dovecot.tls_port, ssl_context=context)
    client.login(user, password)
    return client


def _create(dovecot: Dovecot, ca: MailCA, user: str, password: str, name: str, use: str | None) -> str:
    client = _client(dovecot, ca, user, password)
    try:
        quoted = '"' + name + '"'
        if use is None:
            status, data = client.create(quoted)
        else:
            status, data = client._simple_command("CREATE", quoted, f"(USE ({use}))")
        return f"{status} {data!r}"
    finally:
        client.logout()


def _messages(dovecot: Dovecot, ca: MailCA, user: str, password: str, name: str) -> list[tuple[str, bytes]]:
    client = _client(dovecot, ca, user, password)
    try:
        status, _ = client.select('"' + name + '"', readonly=True)
        assert status == "OK", name
        _, found = client.search(None, "ALL")
        result: list[tuple[str, bytes]] = []
        for number in (found[0] or b"").split():
            _, parts = client.fetch(number.decode(), "(FLAGS BODY.PEEK[])")
            head, raw = parts[0]  # type: ignore[misc]
            flags = re.search(rb"FLAGS \(([^)]*)\)", head)
            result.append(((flags.group(1) if flags else b"").decode(), raw))
        return result
    finally:
        client.logout()


async def create_folder(
    dovecot: Dovecot, ca: MailCA, user: str, password: str, name: str, *, use: str | None = None
) -> str:
    """CREATE the folder (with `USE (\\Sent)`-style special use when `use` is given); the server's answer."""
    return await asyncio.to_thread(_create, dovecot, ca, user, password, name, use)


async def folder_messages(
    dovecot: Dovecot, ca: MailCA, user: str, password: str, name: str
) -> list[tuple[str, bytes]]:
    """(flags, raw bytes) of every message in the folder."""
    return await asyncio.to_thread(_messages, dovecot, ca, user, password, name)
