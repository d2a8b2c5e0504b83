"""Helpers for the warmup tests: mailboxes whose SMTP is the aiosmtpd test server and whose IMAP is the test
Dovecot, a delivery bridge (what aiosmtpd accepts is APPENDed to the recipient's INBOX, or its Junk folder
for the recipients a test marks as filtering into spam), the recipient's own view over stdlib imaplib, and
a warmup runtime on the injectable clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from outreach_app.adapters import ImapWarmupTender, SmtpMailSender
from outreach_app.adapters.oauth import AuthlibOAuthClient
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import warmup_mailboxes, warmup_messages
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from tests.conftest import WorkspaceHandle
from tests.imap_client import Maildrop
from tests.mail_servers import MailServers, Received
from tests.mailboxes.helpers import seed_mailbox


@dataclass
class Bridge:
    """Delivers what the SMTP server accepts into Dovecot as the recipient sees it."""

    servers: MailServers
    spam_for: set[str] = field(default_factory=set)
    delivered: list[Received] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __call__(self, received: Received) -> None:
        self.delivered.append(received)
        try:
            self._deliver(received)
        except Exception as exc:  # kept for the test to show (this runs in the SMTP server's thread)
            self.errors.append(repr(exc))

    def _deliver(self, received: Received) -> None:
        for rcpt in received.rcpt_tos:
            password = self.servers.users.snapshot().get(rcpt)
            if password is None:
                continue
            folder = "Junk" if rcpt in self.spam_for else "INBOX"
            box = Maildrop(self.servers, rcpt, password)
            box.ensure(folder)
            box.append_now(received.data, folder=folder)

    def to(self, address: str) -> list[Received]:
        return [r for r in self.delivered if address in r.rcpt_tos]


async def pool_mailbox(ws: WorkspaceHandle, servers: MailServers, **columns: Any) -> tuple[str, str, str]:
    """A mailbox on the test servers (SMTP: aiosmtpd STARTTLS; IMAP: Dovecot TLS); (id, address, password)."""
    user, password = servers.add_user()
    smtp = servers.smtp_settings(user, "starttls")
    imap = servers.imap_settings(user, "tls")
    mailbox_id = await seed_mailbox(
        ws,
        user,
        password=password,
        smtp_host=smtp["host"],
        smtp_port=smtp["port"],
        smtp_security="starttls",
        smtp_user=user,
        imap_host=imap["host"],
        imap_port=imap["port"],
        imap_security="tls",
        imap_user=user,
        **columns,
    )
    return mailbox_id, user, password


def warmup_runtime(runtime: Runtime, clock: FixedClock, **settings: Any) -> Runtime:
    """A runtime on the session database with a fixed clock, the real SMTP sender and the real IMAP tender
    (trusting the test CA, loopback allowed); warmup gaps at 0 unless `settings` say otherwise."""
    values = {
        "warmup_min_gap_s": 0.0,
        "warmup_tend_after_s": 0.0,
        "warmup_tend_interval_s": 0.0,
        **settings,
    }
    configured = runtime.settings.model_copy(update=values)
    ca = configured.tls_ca_file
    ports = Ports(
        clock=clock,
        smtp=SmtpMailSender(tls_ca_file=ca, timeout_s=5.0, allow_private=True),
        warmup_mail=ImapWarmupTender(tls_ca_file=ca, timeout_s=10.0, allow_private=True),
        oauth=AuthlibOAuthClient.from_settings(configured),
    )
    return Runtime(configured, engine=runtime.engine, ports=ports)


async def clear_pool(runtime: Runtime) -> None:
    """Nothing of earlier tests in the pool (it spans every workspace of the session's database)."""

    async def clear(ctx: SystemContext) -> None:
        await ctx.conn.execute(system_scope(warmup_messages).delete())
        await ctx.conn.execute(system_scope(warmup_mailboxes).delete())

    await runtime.system(clear)


async def messages_rows(runtime: Runtime) -> list[Any]:
    async def read(ctx: SystemContext) -> list[Any]:
        stmt = (
            system_scope(warmup_messages).select().order_by(warmup_messages.c.sent_at, warmup_messages.c.id)
        )
        return list((await ctx.conn.execute(stmt)).all())

    return await runtime.system_read(read)


async def set_rows(runtime: Runtime, table: Any, where: Any, **values: Any) -> None:
    async def update(ctx: SystemContext) -> None:
        await ctx.conn.execute(system_scope(table).update().where(where).values(**values))

    await runtime.system(update)
