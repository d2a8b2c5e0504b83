"""Adapters for the core's ports (the real I/O)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

import aioimaplib
import aiosmtplib
import dns.asyncresolver
import dns.exception
import dns.message
import dns.rdatatype
import dns.resolver
import httpx
import structlog

from outreach_app.outgoing import AddressGuard, NotContacted, SocketIMAP4, guarded_http_client, tls_context
from outreach_core.ports import Delivery, DnsAnswer, DnsResolver, MailServer
from outreach_core.settings import Settings
from outreach_core.urls import url_problem

_log = structlog.get_logger()


class DnspythonResolver:
    """`ports.DnsResolver` over dnspython; honours `OUTREACH_DNS_NAMESERVERS` (`host:port[,host:port]`)."""

    def __init__(self, nameservers: str | None = None, *, timeout_s: float = 3.0) -> None:
        if nameservers:
            resolver = dns.asyncresolver.Resolver(configure=False)
            hosts, ports = [], set()
            for entry in nameservers.split(","):
                host, _, port = (
                    entry.strip().rpartition(":") if entry.count(":") == 1 else (entry.strip(), "", "")
                )
                hosts.append(host or entry.strip())
                ports.add(int(port) if port else 53)
            resolver.nameservers = hosts
            resolver.port = ports.pop() if len(ports) == 1 else 53
        else:
            resolver = dns.asyncresolver.Resolver()
        resolver.timeout = timeout_s
        resolver.lifetime = timeout_s * 2
        self._resolver = resolver

    async def lookup(self, name: str, rdtype: str) -> list[str]:
        """Answers as text (MX: `"10 mx.example.com."`); empty for NXDOMAIN or no answer.

        Timeouts and server failures raise `dns.exception.DNSException`, so callers can tell "no mail server"
        from "could not ask"."""
        try:
            answer = await self._resolver.resolve(name, rdtype, raise_on_no_answer=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoNameservers) as exc:
            if isinstance(exc, dns.resolver.NXDOMAIN):
                return []
            raise
        return [r.to_text() for r in answer] if answer.rrset is not None else []

    async def lookup_answer(self, name: str, rdtype: str) -> DnsAnswer:
        """`lookup` with the answer's TTL, or for NXDOMAIN / no answer the negative TTL of RFC 2308 from
        the SOA record in the authority section (None without one). Errors raise as in `lookup`."""
        try:
            answer = await self._resolver.resolve(name, rdtype, raise_on_no_answer=False)
        except dns.resolver.NXDOMAIN as exc:
            responses: dict[object, dns.message.Message] = exc.kwargs.get("responses") or {}
            return DnsAnswer([], _negative_ttl(list(responses.values())))
        if answer.rrset is None:
            return DnsAnswer([], _negative_ttl([answer.response]))
        return DnsAnswer([r.to_text() for r in answer], answer.rrset.ttl)


def _negative_ttl(responses: list[dns.message.Message]) -> int | None:
    """RFC 2308 section 5: min(SOA TTL, SOA MINIMUM) of the SOA in the authority section."""
    ttls = [
        min(rrset.ttl, rdata.minimum)
        for response in responses
        for rrset in response.authority
        if rrset.rdtype == dns.rdatatype.SOA
        for rdata in rrset
    ]
    return min(ttls) if ttls else None


class HttpxClient:
    """`ports.HttpClient` over httpx, for the verifier API (and any other outgoing JSON POST).

    - TLS trusts the system store plus `OUTREACH_TLS_CA_FILE` when set.
    - Connections go through `outreach_app.outgoing`: the host is resolved once (through
      `OUTREACH_DNS_NAMESERVERS` when set) and, unless `allow_private_urls` (`OUTREACH_ALLOW_PRIVATE_URLS=1`),
      refused without sending anything when an address is not globally routable; the connection is made to
      the address checked. Redirects are never followed, so a public URL cannot bounce the request to a
      private one.
    - `timeout_s` bounds the whole exchange (connect, send, wait, read), not each phase.
    - The answer is read up to `max_response_bytes`; a longer body is cut there.

    Per the port's contract, every "no answer" outcome (refused URL, name not resolved, connection error,
    timeout) is status 0; the body then says what happened in a few words (e.g. `b"timed out"`), so the
    caller can record it.
    """

    def __init__(
        self,
        *,
        tls_ca_file: str | None = None,
        allow_private_urls: bool = False,
        max_response_bytes: int = 1 << 20,
        dns: DnsResolver | None = None,
    ) -> None:
        self._allow_private = allow_private_urls
        self._max_bytes = max_response_bytes
        guard = AddressGuard(allow_private_urls, dns)
        tls = tls_context(tls_ca_file)
        self._client = guarded_http_client(guard, tls, headers={"User-Agent": "outreach"})

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpxClient:
        return cls(
            tls_ca_file=settings.tls_ca_file,
            allow_private_urls=settings.allow_private_urls,
            dns=_configured_dns(settings),
        )

    async def post_json(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float
    ) -> tuple[int, bytes]:
        """POST `body` to `url`; `(status, body)`, or `(0, what happened)` when there was no answer."""
        problem = url_problem(url, allow_private=self._allow_private)
        if problem is not None:
            _log.warning("http_refused", url=_redact(url), problem=problem)
            return 0, f"refused: {problem}".encode()
        try:
            async with asyncio.timeout(timeout_s):
                return await self._post(url, body, headers)
        except NotContacted as exc:
            _log.warning("http_refused", url=_redact(url), problem=exc.reason)
            return 0, exc.reason.encode()
        except TimeoutError:
            return 0, b"timed out"
        except httpx.HTTPError as exc:
            return 0, _describe(exc).encode()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        # httpx's own timeout is off: `asyncio.timeout` in `post_json` bounds the whole exchange.
        request = self._client.build_request("POST", url, content=body, headers=headers, timeout=None)
        response = await self._client.send(request, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size >= self._max_bytes:
                    break
            return response.status_code, b"".join(chunks)[: self._max_bytes]
        finally:
            await response.aclose()


def _configured_dns(settings: Settings) -> DnsResolver | None:
    """The resolver of outgoing connections: `OUTREACH_DNS_NAMESERVERS` if set, else None (the system's)."""
    return DnspythonResolver(settings.dns_nameservers) if settings.dns_nameservers else None


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection failed"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "protocol error"
    return type(exc).__name__


def _redact(url: str) -> str:
    """The URL without query string or credentials, for logs."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{parts.path}"


class MailLoginClient:
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

    def __init__(
        self,
        *,
        tls_ca_file: str | None = None,
        timeout_s: float = 10.0,
        allow_private: bool = False,
        dns: DnsResolver | None = None,
    ) -> None:
        self._tls = tls_context(tls_ca_file)
        self._timeout_s = timeout_s
        self._guard = AddressGuard(allow_private, dns)

    @classmethod
    def from_settings(cls, settings: Settings) -> MailLoginClient:
        return cls(
            tls_ca_file=settings.tls_ca_file,
            timeout_s=settings.mail_login_timeout_s,
            allow_private=settings.allow_private_urls,
            dns=_configured_dns(settings),
        )

    async def test_smtp(self, server: MailServer, password: str) -> str | None:
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._smtp(server, password)
        except NotContacted as exc:
            return exc.reason
        except TimeoutError:
            return self._timed_out(server)
        except Exception as exc:  # every failure becomes a fixed phrase; see the class docstring
            return _connection_problem(exc, server)

    async def test_imap(self, server: MailServer, password: str) -> str | None:
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._imap(server, password)
        except NotContacted as exc:
            return exc.reason
        except TimeoutError:
            return self._timed_out(server)
        except Exception as exc:
            return _connection_problem(exc, server)

    def _timed_out(self, server: MailServer) -> str:
        where = f"{server.host}:{server.port}"
        return f"timed out after {self._timeout_s:g} s at {where} (check the port and security)"

    async def _smtp(self, server: MailServer, password: str) -> str | None:
        client = _smtp_client(server, self._tls, self._timeout_s)
        try:
            await _smtp_connect(client, self._guard, server)
        except aiosmtplib.SMTPNotSupported:
            return "the SMTP server does not offer STARTTLS; try security tls (usually port 465)"
        try:
            await client.login(server.user, password)
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
                problem = await _imap_starttls(client, self._tls, server.host, self._timeout_s)
                if problem is not None:
                    return problem
            response = await client.login(server.user, password)
            if response.result != "OK":
                return "IMAP login failed: the server refused the user name or password"
            with contextlib.suppress(Exception):
                await client.logout()
            return None
        finally:
            transport = client.protocol.transport if client.protocol is not None else None
            if transport is not None:
                transport.close()


def _smtp_client(server: MailServer, tls: ssl.SSLContext, timeout_s: float) -> aiosmtplib.SMTP:
    """An SMTP client for `server` that connects over sockets `_smtp_connect` opens (to checked addresses);
    `hostname` stays the server's name, for SNI and the certificate check."""
    return aiosmtplib.SMTP(
        hostname=server.host,
        port=None,
        use_tls=server.security == "tls",
        start_tls=server.security == "starttls",
        tls_context=tls,
        timeout=timeout_s,
    )


async def _smtp_connect(client: aiosmtplib.SMTP, guard: AddressGuard, server: MailServer) -> None:
    """Connect `client` (greeting, EHLO, TLS) over a socket to a checked address of the server. The socket
    belongs to asyncio's transport from then on, which closes it (closing it here too early would let its
    descriptor number be reused while the transport still holds it)."""
    await client.connect(sock=await guard.open_socket(server.host, server.port))


async def _imap_starttls(
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


_UNKNOWN_ISSUER = frozenset({2, 18, 19, 20, 21})
"""OpenSSL verify codes of a certificate whose issuer is not trusted (unable to get the issuer certificate,
self-signed, self-signed in the chain, unable to get the local issuer, unable to verify the first one)."""


def _connection_problem(exc: BaseException, server: MailServer) -> str:
    """A fixed phrase for a connection-level failure, looking through wrapped causes."""
    where = f"{server.host}:{server.port}"
    seen: BaseException | None = exc
    while seen is not None:
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


# --- sending ---------------------------------------------------------------------------------------------

_Key = tuple[str, int, str, str]


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
            dns=_configured_dns(settings),
        )

    async def send(
        self, server: MailServer, password: str, mail_from: str, rcpt_to: str, message: bytes
    ) -> Delivery:
        key = (server.host, server.port, server.security, server.user)
        where = f"{server.host}:{server.port}"
        phase: Literal["connect", "auth", "mail"] = "connect"
        try:
            async with asyncio.timeout(self._timeout_s):
                connection = self._connections.get(key)
                if connection is None:
                    client = _smtp_client(server, self._tls, self._timeout_s)
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
                            await _smtp_connect(client, self._guard, server)
                        except aiosmtplib.SMTPNotSupported:
                            return Delivery(
                                ok=False, phase="tls", reason="the SMTP server does not offer STARTTLS"
                            )
                        phase = "auth"
                        try:
                            await client.login(server.user, password)
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
            reason = _connection_problem(exc, server)
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
