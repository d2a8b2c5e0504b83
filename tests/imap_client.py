"""A mailbox as its owner's mail client sees it, for tests that put mail into a test Dovecot or look at it
there: stdlib imaplib over implicit TLS, trusting the test CA, logged in with the user's password (PLAIN).
The async methods run in a thread so the event loop keeps serving; `ensure` and `append_now` are for code
already off the loop (an SMTP server's delivery thread)."""

from __future__ import annotations

import asyncio
import imaplib
import re
import ssl
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from tests.mail_servers import Dovecot, MailCA


class HasImap(Protocol):
    """Where the mailbox lives: `MailServers`, or any object with a Dovecot and the CA it trusts."""

    @property
    def ca(self) -> MailCA: ...

    @property
    def imap(self) -> Dovecot: ...


def _q(folder: str) -> str:
    return '"' + folder + '"'


class Maildrop:
    """One user's mailbox on `servers.imap`; each call is one connection (login, work, logout)."""

    def __init__(self, servers: HasImap, user: str, password: str) -> None:
        self.servers = servers
        self.user = user
        self.password = password

    def run(self, work: Callable[[imaplib.IMAP4_SSL], Any]) -> Any:
        """`work(client)` on a logged-in connection (blocking)."""
        context = ssl.create_default_context(cafile=str(self.servers.ca.ca_file))
        client = imaplib.IMAP4_SSL(self.servers.imap.host, self.servers.imap.tls_port, ssl_context=context)
        try:
            client.login(self.user, self.password)
            return work(client)
        finally:
            client.logout()

    def ensure(self, folder: str) -> None:
        """The folder exists (CREATE; INBOX always does, and an existing folder's NO is fine)."""
        if folder != "INBOX":
            self.run(lambda c: c.create(_q(folder)))

    def append_now(self, *messages: bytes, folder: str = "INBOX", when: datetime | None = None) -> None:
        """APPEND each message to `folder` with `when` (default now) as INTERNALDATE (blocking)."""
        at = when or datetime.now(UTC)

        def work(client: imaplib.IMAP4_SSL) -> None:
            for raw in messages:
                status, data = client.append(_q(folder), "", imaplib.Time2Internaldate(at.timestamp()), raw)
                assert status == "OK", data

        self.run(work)

    async def append(self, *messages: bytes, folder: str = "INBOX", when: datetime | None = None) -> None:
        await asyncio.to_thread(self.append_now, *messages, folder=folder, when=when)

    async def command(self, name: str, folder: str) -> None:
        """A folder command of imaplib (`create`, `delete`, `subscribe` ...) that must answer OK."""

        def work(client: imaplib.IMAP4_SSL) -> None:
            status, data = getattr(client, name)(_q(folder))
            assert status == "OK", data

        await asyncio.to_thread(self.run, work)

    async def uidvalidity(self, folder: str = "INBOX") -> int:
        def work(client: imaplib.IMAP4_SSL) -> int:
            status, data = client.status(_q(folder), "(UIDVALIDITY)")
            assert status == "OK"
            return int(data[0].split(b"UIDVALIDITY ")[1].rstrip(b")"))

        return int(await asyncio.to_thread(self.run, work))

    async def unseen(self, folder: str = "INBOX") -> int:
        def work(client: imaplib.IMAP4_SSL) -> int:
            status, data = client.status(_q(folder), "(UNSEEN)")
            assert status == "OK"
            return int(data[0].split(b"UNSEEN ")[1].rstrip(b")"))

        return int(await asyncio.to_thread(self.run, work))

    async def messages(self, folder: str) -> list[tuple[set[str], bytes]]:
        """(flags, raw) of every message in `folder` (read-only, BODY.PEEK: nothing marked read); empty
        when the folder does not exist."""

        def work(client: imaplib.IMAP4_SSL) -> list[tuple[set[str], bytes]]:
            status, _ = client.select(_q(folder), readonly=True)
            if status != "OK":
                return []
            _, data = client.uid("search", None, "ALL")
            out = []
            for uid in data[0].split():
                _, fetched = client.uid("fetch", uid, "(FLAGS BODY.PEEK[])")
                head = fetched[0][0].decode() if isinstance(fetched[0], tuple) else ""
                flags = set(re.findall(r"\\\w+", head.split("FLAGS (", 1)[-1].split(")", 1)[0]))
                out.append((flags, fetched[0][1] if isinstance(fetched[0], tuple) else b""))
            return out

        return list(await asyncio.to_thread(self.run, work))
