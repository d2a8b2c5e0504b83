"""Which SMTP and IMAP servers a mailbox uses: a known provider's, the ones given, or the stored ones
(pure)."""

from __future__ import annotations

from typing import Any

from outreach_core.kernel.ports import MailServer
from outreach_core.mailboxes import rules
from outreach_core.mailboxes.schemas import (
    CreateMailboxIn,
    ServerIn,
)


def domain_of(email: str) -> str:
    return email.rsplit("@", 1)[1]


def login_password(body: CreateMailboxIn) -> str:
    password = body.password.get_secret_value()
    # Google shows app passwords in groups of four letters; people paste them with the spaces.
    return password.replace(" ", "") if body.provider == "google_app" else password


def servers_for(
    provider: str, email: str, smtp: ServerIn | None, imap: ServerIn | None
) -> tuple[MailServer, MailServer]:
    if provider == "google_app":
        gmail = rules.GMAIL
        return MailServer(*gmail.smtp, user=email), MailServer(*gmail.imap, user=email)
    assert smtp is not None and imap is not None  # the body model requires both for provider smtp
    return server_of(smtp), server_of(imap)


def server_of(value: ServerIn) -> MailServer:
    return MailServer(value.host, value.port, value.security, value.user)


def stored_or_new(row: Any, smtp: ServerIn | None, imap: ServerIn | None) -> tuple[MailServer, MailServer]:
    stored_smtp = MailServer(row.smtp_host, row.smtp_port, row.smtp_security, row.smtp_user)
    stored_imap = MailServer(row.imap_host, row.imap_port, row.imap_security, row.imap_user)
    return (server_of(smtp) if smtp else stored_smtp), (server_of(imap) if imap else stored_imap)


def server_columns(smtp: MailServer, imap: MailServer) -> dict[str, Any]:
    return {
        "smtp_host": smtp.host,
        "smtp_port": smtp.port,
        "smtp_security": smtp.security,
        "smtp_user": smtp.user,
        "imap_host": imap.host,
        "imap_port": imap.port,
        "imap_security": imap.security,
        "imap_user": imap.user,
    }
