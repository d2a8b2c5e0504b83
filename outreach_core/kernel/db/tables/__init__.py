"""Every table of the service, as SQLAlchemy Core tables on one `MetaData` (`base.metadata`), one module
per area; import them from here (`from outreach_core.kernel.db.tables import leads`).

A table with a `workspace_id` column is workspace-owned: operations read and change it only through
`outreach_core.kernel.context.scoped()`. Tables without it are global (users, OAuth clients).
Alembic migrations in `db/migrations/versions` create exactly this schema; a test compares the two.
"""

from __future__ import annotations

from sqlalchemy import Text

from outreach_core.kernel.db.tables.accounts import (
    api_keys,
    invitations,
    members,
    oauth_clients,
    oauth_codes,
    oauth_grants,
    oauth_tokens,
    users,
    workspaces,
)
from outreach_core.kernel.db.tables.analytics import analytics_counters, analytics_replies
from outreach_core.kernel.db.tables.audience import (
    domain_cache,
    domain_lookups_wanted,
    import_chunks,
    import_queue,
    import_seen,
    label_timers,
    labels,
    lead_counter_deltas,
    lead_counters,
    lead_imports,
    lead_labels,
    lead_search,
    lead_search_pending,
    leads,
    leads_fts,
    leads_fts_vocab,
    list_leads,
    list_size_deltas,
    lists,
    suppressions,
)
from outreach_core.kernel.db.tables.base import ID, metadata
from outreach_core.kernel.db.tables.deliverability import sending_domains
from outreach_core.kernel.db.tables.events import outbox, webhook_attempts, webhook_deliveries, webhooks
from outreach_core.kernel.db.tables.inbox import inbox_folders, inbox_leases, inbox_messages, threads
from outreach_core.kernel.db.tables.link_domains import link_domains
from outreach_core.kernel.db.tables.mailbox_oauth import mailbox_oauth_states  # OAuth mailboxes (issue 32)
from outreach_core.kernel.db.tables.sending import (
    campaign_lead_counters,
    campaign_leads,
    campaign_mailboxes,
    campaign_steps,
    campaign_variants,
    campaigns,
    mailboxes,
    sending_ips,
    sends,
)
from outreach_core.kernel.db.tables.tracking import tracking_events
from outreach_core.kernel.db.tables.warmup import warmup_mailboxes, warmup_messages
from outreach_core.kernel.db.tables.writing import ai_drafts, billing_events, offer_profiles

__all__ = [
    "ID",
    "Text",
    "ai_drafts",
    "analytics_counters",
    "analytics_replies",
    "api_keys",
    "billing_events",
    "campaign_lead_counters",
    "campaign_leads",
    "campaign_mailboxes",
    "campaign_steps",
    "campaign_variants",
    "campaigns",
    "domain_cache",
    "domain_lookups_wanted",
    "import_chunks",
    "import_queue",
    "import_seen",
    "inbox_folders",
    "inbox_leases",
    "inbox_messages",
    "invitations",
    "label_timers",
    "labels",
    "lead_counter_deltas",
    "lead_counters",
    "lead_imports",
    "lead_labels",
    "lead_search",
    "lead_search_pending",
    "leads",
    "leads_fts",
    "leads_fts_vocab",
    "link_domains",
    "list_leads",
    "list_size_deltas",
    "lists",
    "mailbox_oauth_states",
    "mailboxes",
    "members",
    "metadata",
    "oauth_clients",
    "oauth_codes",
    "oauth_grants",
    "oauth_tokens",
    "offer_profiles",
    "outbox",
    "sending_domains",
    "sending_ips",
    "sends",
    "suppressions",
    "threads",
    "tracking_events",
    "users",
    "warmup_mailboxes",
    "warmup_messages",
    "webhook_attempts",
    "webhook_deliveries",
    "webhooks",
    "workspaces",
]
