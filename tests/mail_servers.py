"""Real mail servers on loopback for tests: aiosmtpd SMTP (STARTTLS and implicit TLS, AUTH against a user
table, recording what it receives) and Dovecot IMAP (STARTTLS and implicit TLS, passwd-file users), all
with certificates from one `trustme` CA whose file the runtime trusts (`OUTREACH_TLS_CA_FILE`).

Fixtures (session-scoped): `mail_ca`, `smtp_servers`, `dovecot`, and `mail_servers`, which bundles them with
`add_user(user, password)` (valid on every server) and `settings(...)` for mailbox bodies. Dovecot is
started as root from a temporary configuration; without it (or without root) tests that need it skip, or
fail when `OUTREACH_REQUIRE_SERVERS=1`.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import pwd
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

Security = Literal["tls", "starttls"]
REQUIRE_SERVERS = os.environ.get("OUTREACH_REQUIRE_SERVERS") == "1"
HOST = "127.0.0.1"
_unique = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    return free_port()


def missing(what: str) -> None:
    """Skip, or fail in CI (`OUTREACH_REQUIRE_SERVERS=1`), because a server cannot run here."""
    if REQUIRE_SERVERS:
        pytest.fail(f"{what} (OUTREACH_REQUIRE_SERVERS=1)")
    pytest.skip(what)


class MailCA:
    """A throw-away CA and one server certificate for `localhost` and 127.0.0.1."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.ca = trustme.CA()
        self.cert = self.ca.issue_cert("localhost", HOST)
        self.ca_file = directory / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self.cert_file = directory / "server-cert.pem"
        self.key_file = directory / "server-key.pem"
        self.cert.private_key_pem.write_to_path(str(self.key_file))
        with self.cert_file.open("wb") as f:
            for blob in self.cert.cert_chain_pems:
                f.write(blob.bytes())
        for path in (directory, self.ca_file, self.cert_file, self.key_file):
            path.chmod(0o755 if path.is_dir() else 0o644)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.cert.configure_cert(context)
        return context


@dataclass
class Received:
    """One message an SMTP server accepted."""

    login: str | None
    mail_from: str
    rcpt_tos: list[str]
    data: bytes
    mail_options: list[str] = field(default_factory=list)  # MAIL FROM parameters (SMTPUTF8, SIZE=...)
    peer: str | None = None  # the address the client connected from


@dataclass
class Users:
    """user -> password, shared by every server of a `MailServers` bundle."""

    passwords: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_change: list[Callable[[], None]] = field(default_factory=list)

    def add(self, user: str, password: str) -> None:
        with self.lock:
            self.passwords[user] = password
        for notify in self.on_change:
            notify()

    def check(self, user: str, password: str) -> bool:
        with self.lock:
            return user in self.passwords and self.passwords[user] == password

    def snapshot(self) -> dict[str, str]:
        with self.lock:
            return dict(self.passwords)


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_RCPT(
        self, smtp: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        reply = self.server.rcpt_reply(address) if self.server.rcpt_reply else None
        if reply is not None:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, smtp: SMTP, session: Session, envelope: Envelope) -> str:
        login = session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None
        reply = self.server.data_reply(envelope.rcpt_tos) if self.server.data_reply else None
        if reply is not None:
            return reply
        received = Received(
            login=login,
            mail_from=str(envelope.mail_from),
            rcpt_tos=list(envelope.rcpt_tos),
            data=bytes(envelope.original_content or b""),
            mail_options=list(envelope.mail_options),
            peer=str(session.peer[0]) if session.peer else None,
        )
        with self.server.lock:
            self.server.messages.append(received)
        if self.server.on_message is not None:
            self.server.on_message(received)
        return "250 Message accepted"


class _OAuthHandler(_Handler):
    """`_Handler` that also offers AUTH XOAUTH2 (Google's and Microsoft's OAuth mailboxes): the bearer is
    checked with `SmtpServer.bearer_ok(user, token)`; a refused one gets XOAUTH2's 334 error challenge,
    then 535, as Gmail answers."""

    async def auth_XOAUTH2(self, server: SMTP, args: list[str]) -> AuthResult:
        check = self.server.bearer_ok
        raw = args[1] if len(args) > 1 else await server.challenge_auth("")
        try:
            sasl = base64.b64decode(raw)
            fields = sasl.decode().split("\x01")
        except (ValueError, TypeError, UnicodeDecodeError):
            return AuthResult(success=False, handled=False)
        with self.server.lock:
            self.server.xoauth2_sasl.append(sasl)
        user = fields[0].removeprefix("user=")
        token = next((f.removeprefix("auth=Bearer ") for f in fields if f.startswith("auth=")), "")
        with self.server.lock:
            self.server.xoauth2_logins.append(user)
        if check is not None and check(user, token):
            return AuthResult(success=True, auth_data=LoginPassword(user.encode(), b""))
        error = json.dumps({"status": "401", "schemes": "Bearer", "scope": "https://mail.google.com/"})
        await server.challenge_auth(error)
        return AuthResult(success=False, handled=False)


class SmtpServer:
    """aiosmtpd in its own thread: `security` "starttls" (STARTTLS required before AUTH) or "tls" (implicit
    TLS). AUTH PLAIN/LOGIN against `users`. `messages` records what was accepted (and `on_message` is called
    with each); `rcpt_reply(address)` may return an SMTP reply (e.g. "550 5.1.1 no such user") to refuse a
    recipient, `data_reply(recipients)` one to refuse the message after DATA. `smtputf8` offers SMTPUTF8
    (RFC 6531; aiosmtpd does not by default). `port` defaults to a free one. `bearer_ok(user, token)` also
    offers AUTH XOAUTH2 checking the bearer with it (`xoauth2_logins` lists the users that tried,
    `xoauth2_sasl` the bytes each sent)."""

    def __init__(
        self,
        security: Security,
        ca: MailCA,
        users: Users,
        *,
        smtputf8: bool = False,
        port: int | None = None,
        bearer_ok: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.security = security
        self.host = HOST
        self.port = port or free_port()
        self.users = users
        self.messages: list[Received] = []
        self.lock = threading.Lock()
        self.rcpt_reply: Callable[[str], str | None] | None = None
        self.data_reply: Callable[[list[str]], str | None] | None = None
        self.on_message: Callable[[Received], None] | None = None
        self.bearer_ok = bearer_ok
        self.xoauth2_logins: list[str] = []
        self.xoauth2_sasl: list[bytes] = []  # each AUTH XOAUTH2's initial response, base64-decoded
        handler = _OAuthHandler(self) if bearer_ok is not None else _Handler(self)
        tls = ca.server_context()
        common: dict[str, Any] = {
            "hostname": HOST,
            "port": self.port,
            "server_hostname": "localhost",
            "authenticator": self._authenticate,
            "auth_require_tls": security == "starttls",
            "enable_SMTPUTF8": smtputf8,
        }
        if security == "starttls":
            self._controller = Controller(handler, tls_context=tls, require_starttls=True, **common)
        else:
            self._controller = Controller(handler, ssl_context=tls, **common)

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if isinstance(auth_data, LoginPassword) and self.users.check(
            auth_data.login.decode(), auth_data.password.decode()
        ):
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    def start(self) -> None:
        self._controller.start()

    def stop(self) -> None:
        self._controller.stop()


_DOVECOT_CONF = """\
protocols = imap
listen = {host}
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
disable_plaintext_auth = yes
auth_mechanisms = plain login{oauth2_mechanisms}
# Tests fail logins on purpose: no delay after a failure, and no growing penalty for 127.0.0.1 (the auth
# process turns penalties off when it cannot reach anvil's penalty socket).
auth_failure_delay = 0
service anvil {{
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
default_internal_user = {internal}
default_login_user = {login_user}
first_valid_uid = 1
first_valid_gid = 1
# IDLE learns of new mail through inotify, but every imap process runs as `nobody` and Linux gives one user
# 128 inotify instances (shared with any other Dovecot on the machine): past that, a process checks the
# folder every `mailbox_idle_check_interval` (30 s by default), too slow for the inbox worker's tests.
mailbox_idle_check_interval = 1 secs
mail_location = maildir:{root}/mail/%u
{import_environment}passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/users/%u
}}
{oauth2_passdb}userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/home/%u
}}
service imap-login {{
  inet_listener imap {{
    address = {host}
    port = {starttls_port}
  }}
  inet_listener imaps {{
    address = {host}
    port = {tls_port}
    ssl = yes
  }}
}}
"""


# The suite run with the clock moved by libfaketime (`.ci/run`): Dovecot clears its processes' environment, so
# libfaketime's variables are passed on for its clock (INTERNALDATE, file times) to move with the tests'. It
# fakes the times Dovecot reads back from files, so it must also fake the times Dovecot sets on them
# (FAKE_UTIME: an APPEND with a date), else those would be moved twice.
_FAKETIME_VARIABLES = ("LD_PRELOAD", "FAKETIME", "FAKETIME_DONT_FAKE_MONOTONIC", "FAKETIME_NO_CACHE")


def _faked_clock_environment() -> str:
    if "FAKETIME" not in os.environ:
        return ""
    kept = " ".join(name for name in _FAKETIME_VARIABLES if name in os.environ)
    return f"import_environment = TZ {kept} FAKE_UTIME=1\n"


class Dovecot:
    """Dovecot IMAP from a temporary configuration: `starttls_port` (143-style: plain, STARTTLS, then
    LOGIN) and `tls_port` (993-style implicit TLS). Users come from passwd-files written whenever `users`
    changes. Ports default to free ones."""

    def __init__(
        self,
        root: Path,
        ca: MailCA,
        users: Users,
        *,
        tls_port: int | None = None,
        starttls_port: int | None = None,
        introspection_url: str | None = None,
    ) -> None:
        """`introspection_url`: also take AUTHENTICATE XOAUTH2 and OAUTHBEARER, the bearer checked by
        Dovecot's `oauth2` passdb with a POST to that RFC 7662 introspection endpoint (its `email` must be
        the user name and `active` true)."""
        self.introspection_url = introspection_url
        self.root = root
        self.host = HOST
        self.starttls_port = starttls_port or free_port()
        self.tls_port = tls_port or free_port()
        self.users = users
        self._ca = ca
        self._process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def problem() -> str | None:
        """Why Dovecot cannot run here, or None."""
        if shutil.which("dovecot") is None:
            return "Dovecot is not installed (apt-get install dovecot-imapd dovecot-core)"
        if os.geteuid() != 0:
            return "Dovecot test servers are started as root"
        for name in ("dovecot", "dovenull", "nobody"):
            try:
                pwd.getpwnam(name)
            except KeyError:
                return f"the system user {name} is missing (Dovecot package not fully installed)"
        return None

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        for sub in ("home", "mail"):
            (self.root / sub).mkdir(exist_ok=True)
            (self.root / sub).chmod(0o777)
        nobody = pwd.getpwnam("nobody")
        conf = self.root / "dovecot.conf"
        conf.write_text(
            _DOVECOT_CONF.format(
                host=HOST,
                root=self.root,
                cert=self._ca.cert_file,
                key=self._ca.key_file,
                internal="dovecot",
                login_user="dovenull",
                uid=nobody.pw_uid,
                gid=nobody.pw_gid,
                starttls_port=self.starttls_port,
                tls_port=self.tls_port,
                import_environment=_faked_clock_environment(),
                **self._oauth2(),
            )
        )
        self._write_users()
        self.users.on_change.append(self._write_users)
        self._process = subprocess.Popen(
            ["dovecot", "-F", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 15
        while not all(_accepts(self.host, p) for p in (self.starttls_port, self.tls_port)):
            if self._process.poll() is not None:
                err = self._process.stderr.read().decode() if self._process.stderr else ""
                raise RuntimeError(f"dovecot exited: {err}\n{self.log()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"dovecot did not start listening\n{self.log()}")
            time.sleep(0.05)

    def _oauth2(self) -> dict[str, str]:
        if self.introspection_url is None:
            return {"oauth2_mechanisms": "", "oauth2_passdb": ""}
        conf = self.root / "oauth2.conf"
        conf.write_text(
            f"introspection_mode = post\nintrospection_url = {self.introspection_url}\n"
            "username_attribute = email\nactive_attribute = active\nactive_value = true\n"
            "tls_ca_cert_file = /etc/ssl/certs/ca-certificates.crt\n"
        )
        conf.chmod(0o644)
        passdb = f"passdb {{\n  driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n  args = {conf}\n}}\n"
        return {"oauth2_mechanisms": " xoauth2 oauthbearer", "oauth2_passdb": passdb}

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text() if path.exists() else ""

    def _write_users(self) -> None:
        """One passwd-file per user (`users/<user>`): a new user's file is read on first use. Dovecot checks
        a file it has read at most once a second, so after a changed password this waits that second out."""
        directory = self.root / "users"
        directory.mkdir(exist_ok=True)
        directory.chmod(0o755)
        changed = False
        for user, password in self.users.snapshot().items():
            path = directory / user
            line = f"{user}:{{PLAIN}}{password}::::::\n"
            if path.exists() and path.read_text() == line:
                continue
            changed = changed or path.exists()
            tmp = directory / f".{user}.{next(_unique)}"
            tmp.write_text(line)
            tmp.chmod(0o644)
            if path.exists():
                # Dovecot re-reads a passwd-file when its mtime (whole seconds) or size changed: a new
                # password of the same length written within the same second would go unnoticed.
                stamp = max(time.time(), path.stat().st_mtime + 2)
                os.utime(tmp, (stamp, stamp))
            tmp.replace(path)
        if changed:
            time.sleep(1.1)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


@dataclass
class MailServers:
    """Every test mail server, sharing one user table."""

    ca: MailCA
    users: Users
    smtp: dict[Security, SmtpServer]
    imap: Dovecot

    def add_user(self, user: str | None = None, password: str | None = None) -> tuple[str, str]:
        """A new user (unique email by default) valid on every server; returns (user, password)."""
        n = next(_unique)
        user = user or f"box{n}-{os.getpid()}@mail.test"
        password = password or f"pw-{n}-S3cret!{os.getpid()}"
        self.users.add(user, password)
        return user, password

    def smtp_settings(self, user: str, security: Security = "starttls") -> dict[str, Any]:
        server = self.smtp[security]
        return {"host": server.host, "port": server.port, "security": security, "user": user}

    def imap_settings(self, user: str, security: Security = "tls") -> dict[str, Any]:
        port = self.imap.tls_port if security == "tls" else self.imap.starttls_port
        return {"host": self.imap.host, "port": port, "security": security, "user": user}

    def body(
        self, user: str, password: str, smtp: Security = "starttls", imap: Security = "tls", **extra: Any
    ) -> dict[str, Any]:
        """A create/test body for provider smtp on these servers."""
        return {
            "provider": "smtp",
            "email": user,
            "password": password,
            "smtp": self.smtp_settings(user, smtp),
            "imap": self.imap_settings(user, imap),
            **extra,
        }


# --- fixtures -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def mail_ca() -> Iterator[MailCA]:
    root = Path(tempfile.mkdtemp(prefix="outreach-mail-ca-"))
    yield MailCA(root)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def mail_users() -> Users:
    return Users()


@pytest.fixture(scope="session")
def smtp_servers(mail_ca: MailCA, mail_users: Users) -> Iterator[dict[Security, SmtpServer]]:
    servers: dict[Security, SmtpServer] = {
        "starttls": SmtpServer("starttls", mail_ca, mail_users),
        "tls": SmtpServer("tls", mail_ca, mail_users),
    }
    for server in servers.values():
        server.start()
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="session")
def smtputf8_server(mail_ca: MailCA, mail_users: Users) -> Iterator[SmtpServer]:
    """A STARTTLS server that offers SMTPUTF8 (the `smtp_servers` ones do not)."""
    server = SmtpServer("starttls", mail_ca, mail_users, smtputf8=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def dovecot(mail_ca: MailCA, mail_users: Users) -> Iterator[Dovecot]:
    problem = Dovecot.problem()
    if problem is not None:
        missing(problem)
    # Not under pytest's temporary directory: that one is private to root, and Dovecot's own processes
    # (running as unprivileged users) read the configuration's files.
    root = Path(tempfile.mkdtemp(prefix="outreach-dovecot-"))
    server = Dovecot(root, mail_ca, mail_users)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def mail_servers(
    mail_ca: MailCA, mail_users: Users, smtp_servers: dict[Security, SmtpServer], dovecot: Dovecot
) -> MailServers:
    return MailServers(mail_ca, mail_users, smtp_servers, dovecot)
