"""Building the runtime with the real adapters: what `outreach serve`, `worker`, `mcp` and the operator
commands run on."""

from __future__ import annotations

from outreach_app.adapters import (
    DnspythonResolver,
    GuardedHttpClient,
    ImapInboxConnector,
    ImapSentAppender,
    ImapWarmupTender,
    MailLoginClient,
    SmtpMailSender,
)
from outreach_app.adapters.ai import ChatCompletionsClient, OwnKeyClients
from outreach_app.adapters.oauth import AuthlibOAuthClient
from outreach_app.adapters.stripe_billing import StripeBilling
from outreach_app.adapters.tls_probe import TlsHandshakeProbe
from outreach_app.adapters.web import WebPageFetcher
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings


def build_runtime(settings: Settings | None = None) -> Runtime:
    """The runtime with the real adapters: DNS through OUTREACH_DNS_NAMESERVERS, HTTP for the verifier API and
    webhooks, SMTP/IMAP login tests for mailboxes, SMTP delivery for the sender and replies, IMAP APPEND of
    replies to the Sent folder, IMAP sessions for the inbox worker, the AI port when configured, clients on
    workspaces' own AI keys, website fetches for offer drafts, and Stripe with OUTREACH_BILLING=stripe."""
    settings = settings or Settings()
    dns = DnspythonResolver(settings.dns_nameservers)
    ports = Ports(
        dns=dns,
        http=GuardedHttpClient.from_settings(settings),
        mail=MailLoginClient.from_settings(settings),
        smtp=SmtpMailSender.from_settings(settings),
        inbox=ImapInboxConnector.from_settings(settings),
        imap=ImapSentAppender.from_settings(settings),
        ai=ChatCompletionsClient.from_settings(settings),
        ai_keys=OwnKeyClients(settings),
        web=WebPageFetcher.from_settings(settings),
        billing=StripeBilling.from_settings(settings),
        warmup_mail=ImapWarmupTender.from_settings(settings),  # warmup (issue 32 item 1)
        tls=TlsHandshakeProbe.from_settings(settings, dns),  # the link domain's certificate
        oauth=AuthlibOAuthClient.from_settings(settings),  # Google and Microsoft mailboxes (issue 32)
    )
    return Runtime(settings, ports=ports)
