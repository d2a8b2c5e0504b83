"""`ports.MailLogin`: the SMTP and IMAP login tests of a mailbox."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any

import aioimaplib
import aiosmtplib
import structlog

from outreach_app.adapters.mail_client import GuardedMailClient
from outreach_app.adapters.smtp import connection_problem, smtp_client, smtp_connect, smtp_login
from outreach_app.outgoing import NotContacted, SocketIMAP4
from outreach_core.kernel.ports import MailServer
from outreach_core.kernel.settings import Settings

_log = structlog.get_logger()


class MailLoginClient(GuardedMailClient):
    """`ports.MailLogin`: SMTP AUTH with aiosmtplib and IMAP LOGIN with aioimaplib, over implicit TLS or
    STARTTLS.

    - TLS trusts the system store plus `OUTREACH_TLS_CA_FILE`; certificates and host names are verified.
    - Each login (connect, TLS, greeting, login, goodbye) is bounded by `timeout_s` as a whole.
    - Hosts are resolved once and the connection is made to the address checked (`outreach_app.outgoing`):
      unless `allow_private` (`OUTREACH_ALLOW_PRIVATE_URLS=1`), a host that is, or resolves to, an address
      that is not globally routable is refused without connecting, so mailbox settings cannot probe the
      server's network; the refusal names the setting.
    - Failures are short fixed phrases (plus the server's reply code): exception texts never reach the
      caller, so neither can anything a server or library put in them.
    """

    default_timeout_s = 10.0

    @classmethod
    def timeout_from(cls, settings: Settings) -> float:
        return settings.mail_login_timeout_s

    async def test_smtp(self, server: MailServer, password: str) -> str | None:
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._smtp(server, password)
        except NotContacted as exc:
            return exc.reason
        except TimeoutError:
            return self._timed_out(server)
        except Exception as exc:  # every failure becomes a fixed phrase; see the class docstring
            return connection_problem(exc, server)

    async def test_imap(self, server: MailServer, password: str) -> str | None:
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._imap(server, password)
        except NotContacted as exc:
            return exc.reason
        except TimeoutError:
            return self._timed_out(server)
        except Exception as exc:
            return connection_problem(exc, server)

    def _timed_out(self, server: MailServer) -> str:
        where = f"{server.host}:{server.port}"
        return f"timed out after {self._timeout_s:g} s at {where} (check the port and security)"

    async def _smtp(self, server: MailServer, password: str) -> str | None:
        client = smtp_client(server, self._tls, self._timeout_s)
        try:
            await smtp_connect(client, self._guard, server)
        except aiosmtplib.SMTPNotSupported:
            return "the SMTP server does not offer STARTTLS; try security tls (usually port 465)"
        try:
            await smtp_login(client, server, password)
        except aiosmtplib.SMTPAuthenticationError as exc:
            return f"SMTP login failed: the server refused the user name or password ({exc.code})"
        except aiosmtplib.SMTPNotSupported:
            return "SMTP login failed: the server offers no login method we support (PLAIN, LOGIN, CRAM-MD5)"
        except aiosmtplib.SMTPResponseException as exc:
            return f"SMTP login failed: the server answered {exc.code}"
        finally:
            with contextlib.suppress(Exception):
                await client.quit()
            client.close()
        return None

    async def _imap(self, server: MailServer, password: str) -> str | None:
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
            response = await imap_login(client, server, password)
            if response.result != "OK":
                return "IMAP login failed: the server refused the user name or password"
            with contextlib.suppress(Exception):
                await client.logout()
            return None
        finally:
            transport = client.protocol.transport if client.protocol is not None else None
            if transport is not None:
                transport.close()


async def imap_login(client: SocketIMAP4, server: MailServer, secret: str) -> Any:
    """LOGIN with the password, or AUTHENTICATE XOAUTH2 with an access token (OAuth mailboxes); the
    server's tagged response either way (result OK when logged in)."""
    if server.auth == "xoauth2":
        return await client.xoauth2(server.user, secret)  # aioimaplib says bytes; it formats a str
    return await client.login(server.user, secret)


async def imap_starttls(
    client: aioimaplib.IMAP4, tls: ssl.SSLContext, host: str, timeout_s: float
) -> str | None:
    """STARTTLS for aioimaplib, which has no method for it: send the command on the plain connection, then
    upgrade the protocol's transport in place with `loop.start_tls` and ask for capabilities again
    (RFC 3501: those seen before TLS must be forgotten)."""
    protocol = client.protocol
    if "STARTTLS" not in protocol.capabilities:
        return "the IMAP server does not offer STARTTLS; try security tls (usually port 993)"
    command = aioimaplib.Command("STARTTLS", protocol.new_tag(), loop=protocol.loop)
    response = await asyncio.wait_for(protocol.execute(command), timeout_s)
    if response.result != "OK":
        return "the IMAP server refused STARTTLS"
    loop = asyncio.get_running_loop()
    transport = await loop.start_tls(protocol.transport, protocol, tls, server_hostname=host)
    if transport is None:
        return "TLS error: the connection closed during the TLS handshake"
    protocol.transport = transport
    protocol.capabilities = set()
    await asyncio.wait_for(protocol.capability(), timeout_s)
    return None
