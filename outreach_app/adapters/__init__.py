"""Adapters for the core's ports (`outreach_core.kernel.ports`): the real outside I/O, one module per port.

- `dns`: `DnspythonResolver` (`ports.DnsResolver`), also the resolver of outgoing connections;
- `http`: `GuardedHttpClient` (`ports.HttpClient`, aiohttp), for the verifier API and webhooks;
- `imap`: `ImapInboxConnector` (`ports.InboxConnector`), the inbox worker's IMAP sessions (`imap_parse`
  reads the responses);
- `mail_login`: `MailLoginClient` (`ports.MailLogin`), the SMTP and IMAP login tests of a mailbox;
- `smtp`: `SmtpMailSender` (`ports.MailSender`), and the SMTP connection steps the login tests share;
- `imap_sent`: `ImapSentAppender` (`ports.MailReader.append_sent`), the Sent copy of a reply from a thread.
- `imap_warmup`: `ImapWarmupTender` (`ports.WarmupMail`), the receiving side of warmup (docs/warmup.md).
- `oauth`: `AuthlibOAuthClient` (`ports.OAuthClient`, authlib), the OAuth flow and refreshes of Google and
  Microsoft mailboxes (docs/mailboxes.md "OAuth"); its token endpoints are the providers' fixed URLs.

Every connection goes to an address checked by `outreach_app.outgoing` first. `outreach_app.bootstrap`
wires them into the runtime.
"""

from __future__ import annotations

from outreach_app.adapters.dns import DnspythonResolver
from outreach_app.adapters.http import GuardedHttpClient
from outreach_app.adapters.imap import ImapInboxConnector
from outreach_app.adapters.imap_sent import ImapSentAppender
from outreach_app.adapters.imap_warmup import ImapWarmupTender
from outreach_app.adapters.mail_login import MailLoginClient
from outreach_app.adapters.smtp import SmtpMailSender

__all__ = [
    "DnspythonResolver",
    "GuardedHttpClient",
    "ImapInboxConnector",
    "ImapSentAppender",
    "ImapWarmupTender",
    "MailLoginClient",
    "SmtpMailSender",
]
