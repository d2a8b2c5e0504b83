"""`.env.example`, generated from the settings model (`outreach settings example > .env.example`).

Every field of `outreach_core.kernel.settings.Settings` is listed with its default and its meaning: the
field's own `Field(description=...)` when it has one, otherwise the entry in `MEANINGS` below. A field with
neither makes the generator fail, and tests/ops/test_env_example.py fails when the committed `.env.example`
differs from what the command prints, so the file cannot drift from the code. A new setting: give it a
`description=`, then run `outreach settings example > .env.example`.
"""

from __future__ import annotations

import textwrap
from typing import Any

from pydantic_core import PydanticUndefined

from outreach_core.kernel.settings import Settings

HEADER = """\
# Outreach settings. Copy this file to .env (read from the working directory when present) and uncomment
# what you change; environment variables win over .env. Every setting is optional: the defaults run a
# local server on SQLite.
#
# Generated from outreach_core/kernel/settings.py by `outreach settings example > .env.example`: do not edit
# by hand (a test fails when this file and the settings model differ).
"""

MEANINGS: dict[str, str] = {
    "database_url": "The database. sqlite:///FILE (one machine) or postgresql://USER:PASSWORD@HOST/DB "
    "(scale, several processes); postgres:// and the async drivers' own schemes are accepted too.",
    "secret_key": "Encrypts stored mailbox passwords and signs tokens and links. Required with PostgreSQL; "
    "with SQLite one is generated once and stored beside the database file.",
    "secret_key_previous": "Earlier secret keys (comma-separated), still accepted after a rotation to "
    "decrypt and verify; new values use OUTREACH_SECRET_KEY.",
    "public_url": "The base URL people and mail clients reach the service at (OAuth metadata, unsubscribe, "
    "click and open links). Without it `outreach serve` names its own host and port.",
    "dns_nameservers": "host:port[,host:port] used for every DNS lookup (default: the system resolver).",
    "tls_ca_file": "An extra CA bundle trusted for SMTP, IMAP and outgoing HTTPS "
    "(default: the system store).",
    "allow_private_urls": "1 lets webhook, verifier and website URLs point at loopback or private addresses "
    "(tests, on-premises).",
    "link_target": "Where link domains' CNAME records must point (default: derived from the public URL).",
    "billing": "local: plans set by the operator (`outreach plan set`) or the service's own checkout page; "
    "stripe: Stripe Checkout and webhooks.",
    "stripe_api_key": "Stripe secret key (OUTREACH_BILLING=stripe).",
    "stripe_webhook_secret": "Signing secret of the Stripe webhook endpoint (OUTREACH_BILLING=stripe).",
    "stripe_api_base": "Another Stripe API base URL (tests).",
    "stripe_timeout_s": "Seconds one Stripe API call may take.",
    "ai_provider": "The service's own AI provider (an OpenAI-compatible endpoint); without it an offline "
    "writer and labeller are used.",
    "ai_api_key": "API key of OUTREACH_AI_BASE_URL.",
    "ai_base_url": "Base URL of the OpenAI-compatible Chat Completions endpoint ({base}/chat/completions).",
    "ai_model": "Model name sent to OUTREACH_AI_BASE_URL.",
    "ai_timeout_s": "Seconds one AI request may take as a whole.",
    "ai_openai_base_url": "Endpoint used with a workspace's own OpenAI key (PUT /settings/ai-key).",
    "ai_openai_model": "Model used with a workspace's own OpenAI key.",
    "ai_google_base_url": "Endpoint used with a workspace's own Google key (PUT /settings/ai-key).",
    "ai_google_model": "Model used with a workspace's own Google key.",
    "web_timeout_s": "Seconds one website fetch (offer drafts), redirects included, may take.",
    "web_max_bytes": "The largest web page read for an offer draft, in bytes.",
    "verifier_url": "An email verifier API; without it only local checks (syntax, MX, lists) run.",
    "verifier_api_key": "API key of OUTREACH_VERIFIER_URL.",
    "verifier_timeout_s": "Seconds one verifier request may take.",
    "mail_login_timeout_s": "Seconds one mailbox login test (SMTP AUTH, IMAP LOGIN) may take, per server.",
    "sender_smtp_timeout_s": "Seconds one SMTP hand-off may take as a whole.",
    "sender_stale_after_s": "A send still `sending` after this many seconds was lost in a crash and becomes "
    "`unknown` (never repeated).",
    "sender_batch_mailboxes": "Mailboxes one sender pass looks at.",
    "sender_concurrency": "SMTP hand-offs one sender process runs at once.",
    "sender_idle_nap_s": "Seconds before a mailbox that had nothing to send is looked at again "
    "(0: every pass).",
    "webhook_timeout_s": "Seconds one webhook POST may take as a whole.",
    "webhook_retry_schedule": "Seconds between the attempts of one webhook delivery, comma-separated "
    "(each with +-20 % jitter).",
    "webhook_concurrency_per_endpoint": "Webhook POSTs one worker process runs at once for one endpoint.",
    "inbox_poll_s": "Seconds between inbox polls (mailboxes polled, or servers without IDLE), and the "
    "longest IDLE before it is renewed.",
    "inbox_timeout_s": "Seconds one IMAP step may take.",
    "inbox_fetch_max_bytes": "How much of one message the inbox worker fetches, in bytes.",
    "inbox_batch_size": "Messages stored per transaction by the inbox worker.",
    "inbox_lease_s": "Seconds a worker process holds a mailbox without renewing before another takes it "
    "over.",
    "inbox_max_mailboxes": "Mailboxes one worker process watches at most.",
    "import_abandon_s": "An import whose final chunk has not come this many seconds after its last chunk "
    "ends `failed` (its stored rows stay).",
    "rate_limit_per_minute": "Requests per minute one credential (or address) may make.",
    "rate_limit_burst": "Requests one credential may make at once above the per-minute rate.",
    "max_request_bytes": "The largest request body accepted, in bytes.",
    "log_level": "DEBUG, INFO, WARNING or ERROR (DEBUG shows the migrations' own lines too).",
    "log_json": "1: JSON lines (for log collectors); 0: readable lines; unset: readable when stderr is a "
    "terminal, JSON otherwise.",
    "oauth_access_ttl_s": "Lifetime of an OAuth access token, in seconds.",
    "oauth_refresh_ttl_s": "Lifetime of an OAuth refresh token, in seconds.",
    "oauth_registrations_per_hour": "Anonymous OAuth client registrations per client address per hour.",
    "oauth_unused_client_ttl_s": "Seconds a registered OAuth client that never completed a grant is kept.",
    "metrics_token": "When set, GET /metrics needs `Authorization: Bearer <this token>`.",
}


def _value(default: Any) -> str:
    if default is None or default is PydanticUndefined:
        return ""
    if isinstance(default, bool):
        return "1" if default else "0"
    return str(default)


def env_example() -> str:
    """The text of `.env.example`."""
    prefix = str(Settings.model_config.get("env_prefix", ""))
    parts = [HEADER]
    for name, field in Settings.model_fields.items():
        meaning = field.description or MEANINGS.get(name)
        if not meaning:
            raise LookupError(
                f"setting {name!r} has no meaning: give it Field(description=...) in "
                "outreach_core/kernel/settings.py"
            )
        lines = textwrap.wrap(meaning, width=108)
        parts.append(
            "\n"
            + "".join(f"# {line}\n" for line in lines)
            + f"# {prefix}{name.upper()}={_value(field.default)}\n"
        )
    return "".join(parts)
