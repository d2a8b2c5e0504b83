"""`ports.MailSender` over aiosmtplib, and the SMTP connection steps the login tests share."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Literal

import aioimaplib
import aiosmtplib
import structlog

from outreach_app.adapters.dns import configured_dns
from outreach_app.outgoing import AddressGuard, NotContacted, tls_context
from outreach_core.kernel.ports import Delivery, DnsResolver, MailServer
from outreach_core.kernel.settings import Settings

_log = structlog.get_logger()


async def smtp_login(client: aiosmtplib.SMTP, server: MailServer, secret: str) -> None:
    """Log in as the server says: AUTH with the password (aiosmtplib picks the method), or SASL XOAUTH2 with
    an access token (Google's and Microsoft's OAuth mailboxes). A refused token raises
    `SMTPAuthenticationError` like a refused password: after XOAUTH2's 334 error challenge the empty
    answer the mechanism requires is sent and the final reply (535) is the error's."""
    if server.auth != "xoauth2":
        await client.login(server.user, secret)
        return
    if client.last_ehlo_response is None:
        await client.ehlo()
    if not client.supports_extension("auth"):
        raise aiosmtplib.SMTPException("The SMTP AUTH extension is not supported by this server.")
    initial = base64.b64encode(f"user={server.user}\x01auth=Bearer {secret}\x01\x01".encode())
    response = await client.execute_command(b"AUTH", b"XOAUTH2", initial)
    if response.code == 334:
        response = await client.execute_command(b"")
    if response.code != 235:
        raise aiosmtplib.SMTPAuthenticationError(response.code, response.message)


def smtp_client(server: MailServer, tls: ssl.SSLContext, timeout_s: float) -> aiosmtplib.SMTP:
    """An SMTP client for `server` that connects over sockets `smtp_connect` opens (to checked addresses);
    `hostname` stays the server's name, for SNI and the certificate check."""
    return aiosmtplib.SMTP(
        hostname=server.host,
        port=None,
        use_tls=server.security == "tls",
        start_tls=server.security == "starttls",
        tls_context=tls,
        timeout=timeout_s,
    )


async def smtp_connect(client: aiosmtplib.SMTP, guard: AddressGuard, server: MailServer) -> None:
    """Connect `client` (greeting, EHLO, TLS) over a socket to a checked address of the server: directly, or
    through the mailbox's sending-IP proxy when it has one (never around it: a proxy that fails fails the
    connection). The socket belongs to asyncio's transport from then on, which closes it (closing it here
    too early would let its descriptor number be reused while the transport still holds it)."""
    if server.proxy is None:
        sock = await guard.open_socket(server.host, server.port)
    else:
        sock = await proxied_socket(guard, server, server.proxy)
    await client.connect(sock=sock)


class ProxyFailed(Exception):
    """The sending IP's proxy could not be reached, or refused to connect to the mail server."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def proxied_socket(guard: AddressGuard, server: MailServer, proxy: str) -> socket.socket:
    """A socket to a checked address of `server`, tunnelled through `proxy` (SOCKS5/4 or HTTP CONNECT, by
    python-socks). The address is checked and resolved here, so the proxy is given an IP address and the
    outgoing rules hold as for a direct connection; the proxy itself is the operator's and is trusted."""
    from python_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError
    from python_socks.async_.asyncio import Proxy

    via = Proxy.from_url(proxy)
    shown = f"{via.proxy_host}:{via.proxy_port}"
    last = ""
    for address in await guard.addresses(server.host, server.port):
        try:
            sock: socket.socket = await via.connect(dest_host=address, dest_port=server.port, timeout=15)
        except ProxyTimeoutError:
            last = f"the sending IP's proxy {shown} timed out"
        except ProxyConnectionError:
            last = f"could not connect to the sending IP's proxy {shown}"
        except ProxyError as exc:
            last = f"the sending IP's proxy {shown} could not reach {server.host}:{server.port} ({exc})"
        else:
            sock.setblocking(False)
            return sock
    raise ProxyFailed(last or f"no address to connect to for {server.host}")


_UNKNOWN_ISSUER = frozenset({2, 18, 19, 20, 21})
"""OpenSSL verify codes of a certificate whose issuer is not trusted (unable to get the issuer certificate,
self-signed, self-signed in the chain, unable to get the local issuer, unable to verify the first one)."""


def connection_problem(exc: BaseException, server: MailServer) -> str:
    """A fixed phrase for a connection-level failure, looking through wrapped causes."""
    where = f"{server.host}:{server.port}"
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ProxyFailed):
            return seen.reason
        if isinstance(seen, ssl.SSLCertVerificationError):
            reason = seen.verify_message or "not trusted"
            hint = ""
            if seen.verify_code in _UNKNOWN_ISSUER:
                hint = (
                    "; if the server's certificate comes from a private CA, set OUTREACH_TLS_CA_FILE to a "
                    "file with that CA's certificate"
                )
            return f"TLS error: the certificate of {where} was not accepted ({reason}){hint}"
        if isinstance(seen, ssl.SSLError):
            return f"TLS error: the TLS handshake with {where} failed (check security tls or starttls)"
        if isinstance(seen, ConnectionRefusedError):
            return f"connection refused by {where}"
        if isinstance(seen, socket.gaierror):
            return f"host not found: {server.host}"
        if isinstance(seen, TimeoutError):
            return f"timed out ({where})"
        if isinstance(seen, aiosmtplib.SMTPServerDisconnected | ConnectionResetError | EOFError):
            return f"the server at {where} closed the connection (check security tls or starttls)"
        if isinstance(seen, aiosmtplib.SMTPResponseException):
            return f"the SMTP server at {where} answered {seen.code}"
        if isinstance(seen, aioimaplib.Abort | aioimaplib.Error):
            return f"the IMAP server at {where} answered unexpectedly"
        seen = seen.__cause__ or seen.__context__
    if isinstance(exc, OSError):
        return f"could not connect to {where}"
    return f"the login at {where} failed unexpectedly ({type(exc).__name__})"


_Key = tuple[str, int, str, str, str | None]


@dataclass
class _Connection:
    client: aiosmtplib.SMTP
    last_used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class SmtpMailSender:
    """`ports.MailSender` over aiosmtplib: implicit TLS or STARTTLS per mailbox, AUTH with the mailbox's
    password, then MAIL/RCPT/DATA.

    - Connections are kept per (host, port, security, user) and reused by the next send through the same
      mailbox (checked with NOOP first; a dead one is replaced before anything is sent). `close_idle`
      closes those unused for `idle_s` (SMTP servers drop idle clients after a few minutes anyway).
    - TLS trusts the system store plus `OUTREACH_TLS_CA_FILE`; hosts are resolved once and connected to at
      the address checked, refused when not globally routable unless `OUTREACH_ALLOW_PRIVATE_URLS=1`, as
      for login tests (`outreach_app.outgoing`).
    - An envelope address that is not plain ASCII (`josé@example.com`) is sent with `SMTPUTF8` when the
      server offers it; when it does not, that one email fails (phase `message`) and nothing is sent.
    - Each send is bounded by `timeout_s` as a whole. Failures come back as a `Delivery` with the phase,
      the server's reply code and text, or a fixed phrase: exception texts never leave the adapter. Only
      the connection, TLS and login phases are the mailbox's; what happens from MAIL FROM on is this
      email's (`outreach_core.sending.rules.classify`).
    """

    def __init__(
        self,
        *,
        tls_ca_file: str | None = None,
        timeout_s: float = 30.0,
        allow_private: bool = False,
        idle_s: float = 120.0,
        dns: DnsResolver | None = None,
    ) -> None:
        self._tls = tls_context(tls_ca_file)
        self._timeout_s = timeout_s
        self._guard = AddressGuard(allow_private, dns)
        self._idle_s = idle_s
        self._connections: dict[_Key, _Connection] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> SmtpMailSender:
        return cls(
            tls_ca_file=settings.tls_ca_file,
            timeout_s=settings.sender_smtp_timeout_s,
            allow_private=settings.allow_private_urls,
            dns=configured_dns(settings),
        )

    async def send(
        self, server: MailServer, password: str, mail_from: str, rcpt_to: str, message: bytes
    ) -> Delivery:
        key = (server.host, server.port, server.security, server.user, server.proxy)
        where = f"{server.host}:{server.port}"
        phase: Literal["connect", "auth", "mail"] = "connect"
        try:
            async with asyncio.timeout(self._timeout_s):
                connection = self._connections.get(key)
                if connection is None:
                    client = smtp_client(server, self._tls, self._timeout_s)
                    connection = self._connections[key] = _Connection(client, time.monotonic())
                async with connection.lock:
                    client = connection.client
                    if client.is_connected:
                        try:
                            await client.noop()
                        except (aiosmtplib.SMTPException, OSError):
                            client.close()
                    if not client.is_connected:
                        phase = "connect"
                        try:
                            await smtp_connect(client, self._guard, server)
                        except aiosmtplib.SMTPNotSupported:
                            return Delivery(
                                ok=False, phase="tls", reason="the SMTP server does not offer STARTTLS"
                            )
                        phase = "auth"
                        try:
                            await smtp_login(client, server, password)
                        except aiosmtplib.SMTPAuthenticationError as exc:
                            self._drop(key)
                            return Delivery(
                                ok=False,
                                phase="auth",
                                code=exc.code,
                                reason=f"SMTP login failed: the server refused the user name or password "
                                f"({exc.code})",
                            )
                    connection.last_used = time.monotonic()
                    options: list[str] = []
                    if not (mail_from.isascii() and rcpt_to.isascii()):
                        if not client.supports_extension("smtputf8"):
                            return _no_smtputf8(mail_from, rcpt_to, where)
                        options.append("SMTPUTF8")
                    phase = "mail"
                    await client.sendmail(mail_from, [rcpt_to], message, mail_options=options)
                    connection.last_used = time.monotonic()
                    return Delivery(ok=True, phase="data", code=250, reason="accepted")
        except NotContacted as exc:
            self._drop(key)
            return Delivery(ok=False, phase="connect", reason=exc.reason)
        except aiosmtplib.SMTPRecipientsRefused as exc:
            refused = exc.recipients[0] if exc.recipients else None
            code = refused.code if refused else None
            text = _reply_text(refused.message if refused else "")
            return Delivery(ok=False, phase="rcpt", code=code, reason=f"{code} {text}".strip())
        except aiosmtplib.SMTPSenderRefused as exc:
            self._drop(key)
            return Delivery(
                ok=False, phase="mail", code=exc.code, reason=f"{exc.code} {_reply_text(exc.message)}"
            )
        except aiosmtplib.SMTPResponseException as exc:
            self._drop(key)
            return Delivery(
                ok=False,
                phase="data" if phase == "mail" else "auth",
                code=exc.code,
                reason=f"{exc.code} {_reply_text(exc.message)}",
            )
        except TimeoutError:
            self._drop(key)
            return Delivery(
                ok=False,
                phase="connect" if phase in ("connect", "auth") else "data",
                reason=f"timed out after {self._timeout_s:g} s at {where}",
            )
        except Exception as exc:  # every other failure becomes a fixed phrase; see the class docstring
            self._drop(key)
            if phase == "mail" and isinstance(exc, UnicodeError | aiosmtplib.SMTPNotSupported):
                return Delivery(
                    ok=False, phase="message", reason=f"the email could not be written to {where}"
                )
            reason = connection_problem(exc, server)
            if phase == "mail":  # cut off mid-transaction: this email is retried, the connection replaced
                return Delivery(ok=False, phase="data", reason=reason)
            return Delivery(ok=False, phase="tls" if reason.startswith("TLS") else "connect", reason=reason)

    def _drop(self, key: _Key) -> None:
        connection = self._connections.pop(key, None)
        if connection is not None:
            connection.client.close()

    async def close_idle(self) -> None:
        cutoff = time.monotonic() - self._idle_s
        for key, connection in list(self._connections.items()):
            if connection.last_used < cutoff and not connection.lock.locked():
                self._connections.pop(key, None)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(connection.client.quit(), 5)
                connection.client.close()

    async def aclose(self) -> None:
        for key in list(self._connections):
            connection = self._connections.pop(key)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.client.quit(), 5)
            connection.client.close()


def _no_smtputf8(mail_from: str, rcpt_to: str, where: str) -> Delivery:
    """An address that is not plain ASCII, on a server without SMTPUTF8 (RFC 6531): the recipient's cannot be
    sent through it, so this one email fails; the mailbox's own would fail every email (the mailbox's)."""
    if not mail_from.isascii():
        return Delivery(
            ok=False,
            phase="sender",
            reason=f"the mailbox's address {mail_from} is not plain ASCII and the SMTP server at {where} "
            "does not offer SMTPUTF8, which such an address needs",
        )
    return Delivery(
        ok=False,
        phase="message",
        reason=f"the address {rcpt_to} is not plain ASCII and the SMTP server at {where} does not offer "
        "SMTPUTF8, which such an address needs",
    )


def _reply_text(text: str) -> str:
    """A server's reply text on one line, cut short (it ends up in the ledger and in `statusReason`)."""
    return " ".join(str(text).split())[:300]
