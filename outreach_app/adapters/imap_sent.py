"""`ports.MailReader.append_sent`: a copy of a reply sent from a thread, stored in the mailbox's Sent folder.

SMTP does not put a copy in the sender's Sent folder (only Gmail does that by itself), so a reply sent from
the service would be missing from the person's own mail client. The copy is APPENDed over IMAP:

- the connection is made like the login test's (`mail_login.py`): a checked address, implicit TLS or
  STARTTLS, certificates verified, the whole exchange bounded by `timeout_s`;
- the folder: the one LIST marks `\\Sent` (RFC 6154 SPECIAL-USE, asked with `RETURN (SPECIAL-USE)` where
  the server offers it), else the first of "Sent", "Sent Items", "Sent Messages", "INBOX.Sent" that exists
  (any case); none is created (the LIST answer is read by `imap_parse.list_folders`, shared with the inbox);
- `APPEND` with the flag `\\Seen` and the send time as INTERNALDATE. Gmail stores the message it relayed in
  its Sent folder by itself: the append then makes a duplicate that Gmail merges by Message-ID.

Failures come back as short fixed phrases (never an exception's text or the password).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

import structlog

from outreach_app.adapters import imap_parse as parse
from outreach_app.adapters.mail_client import GuardedMailClient
from outreach_app.adapters.mail_login import imap_login, imap_starttls
from outreach_app.adapters.smtp import connection_problem
from outreach_app.outgoing import NotContacted, SocketIMAP4
from outreach_core.kernel.ports import MailServer
from outreach_core.kernel.settings import Settings

_log = structlog.get_logger()


class ImapSentAppender(GuardedMailClient):
    """`ports.MailReader` (the part the core uses): `append_sent` over aioimaplib."""

    default_timeout_s = 20.0

    @classmethod
    def timeout_from(cls, settings: Settings) -> float:
        return max(settings.mail_login_timeout_s, 20.0)

    async def append_sent(
        self, server: MailServer, password: str, message: bytes, when: datetime
    ) -> str | None:
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._append(server, password, message, when)
        except NotContacted as exc:
            return exc.reason
        except TimeoutError:
            return f"timed out after {self._timeout_s:g} s at {server.host}:{server.port}"
        except Exception as exc:  # every failure becomes a fixed phrase (module docstring)
            _log.info("imap_append_failed", host=server.host, port=server.port, error=type(exc).__name__)
            return connection_problem(exc, server)

    async def _append(self, server: MailServer, password: str, message: bytes, when: datetime) -> str | None:
        sock = await self._guard.open_socket(server.host, server.port)
        client = SocketIMAP4(
            sock,
            server.host,
            timeout=self._timeout_s,
            ssl_context=self._tls if server.security == "tls" else None,
        )
        try:
            await client.wait_hello_from_server()
            if server.security == "starttls":
                problem = await imap_starttls(client, self._tls, server.host, self._timeout_s)
                if problem is not None:
                    return problem
            if (await imap_login(client, server, password)).result != "OK":
                return "IMAP login failed: the server refused the user name or password"
            await client.protocol.capability()  # those after the login may add SPECIAL-USE
            folder = await self._sent_folder(client)
            if folder is None:
                return (
                    "the mailbox has no Sent folder (none marked \\Sent, none named "
                    + ", ".join(f'"{n}"' for n in parse.SENT_NAMES)
                    + ")"
                )
            response = await client.append(message, mailbox=parse.quote(folder), flags="(\\Seen)", date=when)
            if response.result != "OK":
                return f"the IMAP server refused to store the copy in {folder}"
            with contextlib.suppress(Exception):
                await client.logout()
            return None
        finally:
            transport = client.protocol.transport if client.protocol is not None else None
            if transport is not None:
                transport.close()

    async def _sent_folder(self, client: SocketIMAP4) -> str | None:
        capabilities = {c.upper() for c in client.protocol.capabilities}
        pattern = '"*" RETURN (SPECIAL-USE)' if "SPECIAL-USE" in capabilities else '"*"'
        response = await client.list('""', pattern)
        if response.result != "OK":
            return None
        return parse.sent_folder(parse.list_folders(response.lines))
