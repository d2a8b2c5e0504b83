"""Every table of the service, as SQLAlchemy Core tables on one `MetaData`.

A table with a `workspace_id` column is workspace-owned: operations read and change it only through
`outreach_core.context.scoped()`. Tables without it are global (users, OAuth clients).
Alembic migrations in `db/migrations/versions` create exactly this schema; a test compares the two.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    column,
    table,
    text,
)

from outreach_core.db.types import JsonType, UtcDateTime

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

ID = String(40)


def _ws_fk() -> Column[str]:
    return Column("workspace_id", ID, ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False)


# --- workspace -------------------------------------------------------------------------------------------

users = Table(
    "users",
    metadata,
    Column("id", ID, primary_key=True),
    Column("email", String(320), nullable=False, unique=True),
    Column("name", String(120), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

workspaces = Table(
    "workspaces",
    metadata,
    Column("id", ID, primary_key=True),
    Column("name", String(60), nullable=False),
    Column("slug", String(60), nullable=False, unique=True),
    Column("timezone", String(64), nullable=False, server_default="UTC"),
    # sending settings
    Column("unsubscribe_mode", String(16), nullable=False, server_default="link"),
    Column("ai_labels", Boolean, nullable=False, server_default="1"),
    Column("own_ai_key", String(16), nullable=True),
    # billing, `local` provider: set by the operator (`outreach init --plan`, `outreach plan set`)
    Column("plan", String(16), nullable=True),
    Column("plan_interval", String(8), nullable=True),
    Column("plan_status", String(16), nullable=True),
    Column("plan_renews_at", UtcDateTime, nullable=True),
    Column("plan_period_start", UtcDateTime, nullable=True),
    Column("cancel_at_period_end", Boolean, nullable=False, server_default="0"),
    Column("created_at", UtcDateTime, nullable=False),
)

members = Table(
    "members",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("user_id", ID, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("role", String(8), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "user_id"),
    Index("ix_members_user_id", "user_id"),
)

invitations = Table(
    "invitations",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("email", String(320), nullable=False),
    Column("role", String(8), nullable=True),
    Column("invited_by", ID, ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "email"),
)

# --- API keys --------------------------------------------------------------------------------------------

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("created_by", ID, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(60), nullable=True),
    Column("start", String(16), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("last_used_at", UtcDateTime, nullable=True),
    Column("expires_at", UtcDateTime, nullable=True),
    Column("revoked_at", UtcDateTime, nullable=True),
    Index("ix_api_keys_workspace_id_created_at", "workspace_id", "created_at"),
)

# --- OAuth (MCP clients) ---------------------------------------------------------------------------------

oauth_clients = Table(
    "oauth_clients",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(200), nullable=True),
    Column("uri", String(2000), nullable=True),
    Column("info", JsonType, nullable=False),  # RFC 7591 client information as registered
    Column("created_at", UtcDateTime, nullable=False),
)

oauth_grants = Table(
    "oauth_grants",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("user_id", ID, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("client_id", String(64), ForeignKey("oauth_clients.id", ondelete="CASCADE"), nullable=False),
    Column("scopes", String(500), nullable=False, server_default=""),
    Column("created_at", UtcDateTime, nullable=False),
    Column("last_used_at", UtcDateTime, nullable=True),
    Column("revoked_at", UtcDateTime, nullable=True),
    Index("ix_oauth_grants_workspace_id_client_id", "workspace_id", "client_id"),
)

oauth_codes = Table(
    "oauth_codes",
    metadata,
    Column("code_hash", String(64), primary_key=True),
    _ws_fk(),
    Column("grant_id", ID, ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False),
    Column("client_id", String(64), nullable=False),
    Column("redirect_uri", String(2000), nullable=False),
    Column("redirect_uri_explicit", Boolean, nullable=False),
    Column("code_challenge", String(128), nullable=False),
    Column("scopes", String(500), nullable=False, server_default=""),
    Column("resource", String(2000), nullable=True),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("used_at", UtcDateTime, nullable=True),
)

oauth_tokens = Table(
    "oauth_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    _ws_fk(),
    Column("grant_id", ID, ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(8), nullable=False),  # access | refresh
    Column("client_id", String(64), nullable=False),
    Column("scopes", String(500), nullable=False, server_default=""),
    Column("resource", String(2000), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("revoked_at", UtcDateTime, nullable=True),
    Index("ix_oauth_tokens_grant_id", "grant_id"),
)

# --- leads -----------------------------------------------------------------------------------------------

leads = Table(
    "leads",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("email", String(320), nullable=False),  # normalized (see leads/rules.py)
    Column("domain", String(253), nullable=False),  # the part after @, for MX/ESP and company matching
    Column("first_name", String(200), nullable=True),
    Column("last_name", String(200), nullable=True),
    Column("sort_name", String(401), nullable=False, server_default=""),  # lower(first last), for sort=name
    Column("company", String(300), nullable=True),
    Column("title", String(300), nullable=True),
    Column("website", String(2000), nullable=True),
    Column("phone", String(64), nullable=True),
    Column("linkedin", String(2000), nullable=True),
    Column("country", String(2), nullable=True),
    Column("country_source", String(8), nullable=True),  # timezone | phone | email | website
    Column("timezone", String(64), nullable=True),
    Column("custom", JsonType, nullable=False),
    Column("search_text", Text, nullable=False, server_default=""),  # lower(email name company)
    # search_text once the search-index worker has indexed it (FTS5 / pg_trgm index this column only); NULL
    # until then, or for good when over 900 bytes (leads/rules.py), and such rows are searched with LIKE on
    # search_text (see leads/targets.py)
    Column("search_index", Text, nullable=True),
    Column("esp", String(12), nullable=False, server_default="unknown"),
    Column("mx_host", String(253), nullable=True),
    Column("verify_status", String(12), nullable=False, server_default="unknown"),
    Column("verify_reason", String(200), nullable=True),
    Column("verify_api", Boolean, nullable=False, server_default="0"),  # queued to also use the verifier API
    Column("verified_at", UtcDateTime, nullable=True),
    Column("status", String(16), nullable=False, server_default="active"),
    Column("won_at", UtcDateTime, nullable=True),
    Column("won_value", Float, nullable=True),
    Column("won_campaign_id", ID, nullable=True),
    Column("import_id", ID, nullable=True),
    Column("enriched_at", UtcDateTime, nullable=True),  # null = enrichment (ESP, country) still to do
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=True),
    # The sort indexes carry `search_index`, so that a search paging by walking one reads no table rows
    # (migration 0009); on SQLite the (workspace_id, email, search_index) index `ix_leads_ws_email_search`
    # does for sort=email what INCLUDE does here, made by raw DDL as SQLAlchemy has no per-dialect index.
    UniqueConstraint("workspace_id", "email", postgresql_include=["search_index"]),
    Index("ix_leads_ws_created", "workspace_id", "created_at", "id", "search_index"),
    Index("ix_leads_ws_sort_name", "workspace_id", "sort_name", "id", "search_index"),
    Index("ix_leads_ws_company", "workspace_id", "company", "id", "search_index"),
    Index("ix_leads_ws_status", "workspace_id", "status", "created_at", "id"),
    Index("ix_leads_ws_verify", "workspace_id", "verify_status", "created_at", "id"),
    Index("ix_leads_ws_esp", "workspace_id", "esp", "created_at", "id"),
    Index("ix_leads_ws_domain", "workspace_id", "domain"),
    Index("ix_leads_pending_enrichment", "enriched_at", "workspace_id"),
    Index("ix_leads_import", "import_id"),
    Index(
        "ix_leads_search_pending",
        "workspace_id",
        sqlite_where=text("search_index IS NULL"),
        postgresql_where=text("search_index IS NULL"),
    ),
)

lead_counters = Table(
    "lead_counters",
    metadata,
    # Leads per (workspace, status, verify_status, esp), kept exact by database triggers on `leads`
    # (migration 0003), so stats and unfiltered totals never scan a million rows.
    Column("workspace_id", ID, ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True),
    Column("status", String(16), primary_key=True),
    Column("verify_status", String(12), primary_key=True),
    Column("esp", String(12), primary_key=True),
    Column("n", BigInteger, nullable=False),
)

lists = Table(
    "lists",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("name", String(120), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "name"),
)

list_leads = Table(
    "list_leads",
    metadata,
    Column("list_id", ID, ForeignKey("lists.id", ondelete="CASCADE"), primary_key=True),
    Column("lead_id", ID, ForeignKey("leads.id", ondelete="CASCADE"), primary_key=True),
    _ws_fk(),
    Column("added_at", UtcDateTime, nullable=False),
    Index("ix_list_leads_lead", "lead_id"),
    Index("ix_list_leads_list_added", "list_id", "added_at", "lead_id"),
)

labels = Table(
    "labels",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("name", String(60), nullable=False),
    Column("type", String(8), nullable=False, server_default="neutral"),  # positive|negative|neutral|warning
    Column("color", String(7), nullable=True),
    # triggers that need no campaign (see labels/schemas.py LabelTriggers)
    Column("triggers", JsonType, nullable=False),
    # the built-in label this is (interested, meeting_booked, not_interested, wrong_person, out_of_office,
    # auto_reply, unsubscribe_request, bounce): the inbox rules find it by this even after a rename
    Column("builtin", String(24), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "name"),
    Index("ix_labels_ws_builtin", "workspace_id", "builtin", unique=True),
)

lead_labels = Table(
    "lead_labels",
    metadata,
    Column("lead_id", ID, ForeignKey("leads.id", ondelete="CASCADE"), primary_key=True),
    Column("label_id", ID, ForeignKey("labels.id", ondelete="CASCADE"), primary_key=True),
    _ws_fk(),
    Column("labeled_at", UtcDateTime, nullable=False),
    Index("ix_lead_labels_label", "label_id", "lead_id"),
)

label_timers = Table(
    "label_timers",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("lead_id", ID, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column(
        "label_id", ID, ForeignKey("labels.id", ondelete="CASCADE"), nullable=False
    ),  # the label that set it
    Column("action", String(8), nullable=False),  # remove | apply
    Column("target_label_id", ID, ForeignKey("labels.id", ondelete="CASCADE"), nullable=True),
    Column("due_at", UtcDateTime, nullable=False),
    Index("ix_label_timers_due", "due_at"),
    Index("ix_label_timers_lead_label", "lead_id", "label_id"),
)

suppressions = Table(
    "suppressions",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("kind", String(8), nullable=False),  # email | domain
    Column("value", String(320), nullable=False),  # normalized address or domain
    Column("reason", String(200), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "value"),
    Index("ix_suppressions_ws_created", "workspace_id", "created_at", "id"),
)

lead_imports = Table(
    "lead_imports",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("file_name", String(300), nullable=True),
    Column("list_id", ID, ForeignKey("lists.id", ondelete="SET NULL"), nullable=True),
    Column("status", String(10), nullable=False),  # importing | enriching | done | failed
    Column("verify", Boolean, nullable=False),
    Column("existing", String(6), nullable=False),  # skip | update
    Column("rows", Integer, nullable=False, server_default="0"),
    Column("created", Integer, nullable=False, server_default="0"),
    Column("updated", Integer, nullable=False, server_default="0"),
    Column("skipped", Integer, nullable=False, server_default="0"),
    Column("duplicates", Integer, nullable=False, server_default="0"),
    Column("suppressed", Integer, nullable=False, server_default="0"),
    Column("invalid", Integer, nullable=False, server_default="0"),
    Column("undeliverable", Integer, nullable=False, server_default="0"),
    Column("client_invalid", Integer, nullable=False, server_default="0"),
    Column("client_duplicates", Integer, nullable=False, server_default="0"),
    Column("queued", Integer, nullable=False, server_default="0"),  # received, waiting in import_queue
    Column("over_limit", Integer, nullable=False, server_default="0"),  # not imported: contacts limit
    Column("created_at", UtcDateTime, nullable=False),
    Column("final_at", UtcDateTime, nullable=True),  # the final chunk arrived
    Column("finished_at", UtcDateTime, nullable=True),
    Column("enriched_at", UtcDateTime, nullable=True),
    Index("ix_lead_imports_ws_created", "workspace_id", "created_at"),
    Index("ix_lead_imports_status", "status"),
)

import_chunks = Table(
    "import_chunks",
    metadata,
    Column("import_id", ID, ForeignKey("lead_imports.id", ondelete="CASCADE"), primary_key=True),
    Column("chunk_hash", String(64), primary_key=True),  # sha256 of the canonical chunk: retries are no-ops
    _ws_fk(),
    Column("created_at", UtcDateTime, nullable=False),
)

import_queue = Table(
    "import_queue",
    metadata,
    # Received import rows waiting for the import worker, one part per chunk (see leads/imports.py); a part is
    # deleted in the transaction that merges it into `leads`.
    Column("import_id", ID, ForeignKey("lead_imports.id", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),  # merge order within the import
    _ws_fk(),
    Column("rows", JsonType, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_import_queue_created", "created_at"),
)

import_seen = Table(
    "import_seen",
    metadata,
    Column("import_id", ID, ForeignKey("lead_imports.id", ondelete="CASCADE"), primary_key=True),
    # addresses this import met but did not create (skipped, updated, suppressed): a later row with one is a
    # duplicate. Addresses it created are told by `leads.import_id`.
    Column("email", String(320), primary_key=True),
    _ws_fk(),
)

# The SQLite trigram index over `leads.search_index` (raw DDL in migrations 0005 and 0008; PostgreSQL uses
# pg_trgm), and the list of its trigrams. Lightweight clauses, not part of `metadata`: the index's rows are
# lead rowids, always joined to scoped leads; the list holds trigrams, no lead data.
leads_fts = table("leads_fts", column("rowid"), column("leads_fts"))
leads_fts_vocab = table("leads_fts_vocab", column("term"))

domain_cache = Table(
    "domain_cache",
    metadata,
    Column("domain", String(253), primary_key=True),
    Column("esp", String(12), nullable=False),
    Column("mx_host", String(253), nullable=True),
    Column("has_mx", Boolean, nullable=False),
    Column("checked_at", UtcDateTime, nullable=False),
    # when the answer stops being trusted: a week for mail servers, the DNS negative TTL (at most an hour)
    # for "no mail servers" (migration 0010)
    Column("expires_at", UtcDateTime, nullable=False),
)

# --- mailboxes -------------------------------------------------------------------------------------------

mailboxes = Table(
    "mailboxes",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("email", String(320), nullable=False),  # normalized
    Column("domain", String(253), nullable=False),
    Column("display_name", String(120), nullable=True),
    Column("provider", String(16), nullable=False),  # google_app | google_oauth | microsoft | smtp
    Column("status", String(12), nullable=False, server_default="active"),  # active|paused|error|quarantined
    Column("status_reason", String(500), nullable=True),
    Column("daily_limit", Integer, nullable=False, server_default="30"),
    Column("ramp_enabled", Boolean, nullable=False, server_default="1"),
    Column("ramp_start", Integer, nullable=False, server_default="5"),
    Column("ramp_increment", Integer, nullable=False, server_default="2"),
    Column("ramp_started_on", String(10), nullable=False),  # YYYY-MM-DD in the mailbox timezone: ramp day 1
    Column("min_gap_s", Integer, nullable=False, server_default="60"),
    Column("max_gap_s", Integer, nullable=False, server_default="180"),
    Column("timezone", String(64), nullable=False, server_default="UTC"),
    Column("signature", Text, nullable=True),
    Column("smtp_host", String(253), nullable=False),
    Column("smtp_port", Integer, nullable=False),
    Column("smtp_security", String(8), nullable=False),  # tls | starttls
    Column("smtp_user", String(320), nullable=False),
    Column("imap_host", String(253), nullable=False),
    Column("imap_port", Integer, nullable=False),
    Column("imap_security", String(8), nullable=False),
    Column("imap_user", String(320), nullable=False),
    # MultiFernet token under OUTREACH_SECRET_KEY; never serialized in a response
    Column("password_encrypted", Text, nullable=False),
    Column("inbox_poll", Boolean, nullable=False, server_default="0"),
    Column("last_tested_at", UtcDateTime, nullable=True),
    Column("last_synced_at", UtcDateTime, nullable=True),
    Column("sync_error", String(500), nullable=True),
    # the inbox worker (docs/inbox.md): consecutive IMAP login failures; whether status `error` was set by the
    # inbox (it recovers by itself only from what it caused); the first sync reads mail that arrived after
    # `inbox_since`
    Column("inbox_failures", Integer, nullable=False, server_default="0"),
    Column("inbox_error", Boolean, nullable=False, server_default="0"),
    Column("inbox_since", UtcDateTime, nullable=True),
    # sender bookkeeping: sends counted on `sent_day` (mailbox timezone), earliest time of the next send
    Column("sent_day", String(10), nullable=True),
    Column("sent_count", Integer, nullable=False, server_default="0"),
    Column("last_sent_at", UtcDateTime, nullable=True),
    Column("next_send_at", UtcDateTime, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=True),
    UniqueConstraint("workspace_id", "email"),
    Index("ix_mailboxes_ws_created", "workspace_id", "created_at", "id"),
    Index("ix_mailboxes_status_next", "status", "next_send_at"),
)

# --- campaigns -------------------------------------------------------------------------------------------

campaigns = Table(
    "campaigns",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("name", String(200), nullable=False),
    Column("status", String(10), nullable=False, server_default="draft"),  # draft|running|paused|completed
    Column("paused_reason", String(500), nullable=True),
    Column("timezone_fallback", String(64), nullable=False, server_default="UTC"),
    Column("window_start", Integer, nullable=False, server_default="540"),  # minutes after midnight
    Column("window_end", Integer, nullable=False, server_default="1020"),
    Column("days", Integer, nullable=False, server_default="31"),  # bit 0 = Monday ... bit 6 = Sunday
    Column("daily_cap", Integer, nullable=True),
    Column("bounce_threshold", Float, nullable=True),
    Column("esp_matching", Boolean, nullable=False, server_default="0"),
    Column("stop_on_reply", Boolean, nullable=False, server_default="1"),
    Column("track_clicks", Boolean, nullable=False, server_default="0"),
    Column("track_opens", Boolean, nullable=False, server_default="0"),
    Column("start_on", String(10), nullable=True),  # YYYY-MM-DD in timezone_fallback
    Column("end_on", String(10), nullable=True),
    Column("stop_for_company", Boolean, nullable=False, server_default="0"),
    Column("skip_risky", Boolean, nullable=False, server_default="0"),
    Column("started_at", UtcDateTime, nullable=True),
    Column("completed_at", UtcDateTime, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index("ix_campaigns_ws_created", "workspace_id", "created_at", "id"),
    Index("ix_campaigns_status", "status"),
)

campaign_steps = Table(
    "campaign_steps",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("campaign_id", ID, ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),  # 0-based order in the sequence
    Column("wait_days", Integer, nullable=False, server_default="0"),
    Column("same_thread", Boolean, nullable=False, server_default="1"),
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_campaign_steps_campaign", "campaign_id", "position"),
)

campaign_variants = Table(
    "campaign_variants",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("campaign_id", ID, ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False),
    Column("step_id", ID, ForeignKey("campaign_steps.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),  # 0-based order in the step (A, B, ...)
    Column("subject", Text, nullable=False, server_default=""),
    Column("body", Text, nullable=False, server_default=""),  # sanitized HTML
    Column("weight", Integer, nullable=False, server_default="1"),
    Column("active", Boolean, nullable=False, server_default="1"),
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_campaign_variants_step", "step_id", "position"),
    Index("ix_campaign_variants_campaign", "campaign_id"),
)

campaign_mailboxes = Table(
    "campaign_mailboxes",
    metadata,
    Column("campaign_id", ID, ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True),
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), primary_key=True),
    _ws_fk(),
    Index("ix_campaign_mailboxes_mailbox", "mailbox_id"),
)

campaign_leads = Table(
    "campaign_leads",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("campaign_id", ID, ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False),
    Column("lead_id", ID, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    # not_contacted|contacted|completed|replied|rescheduled|unsubscribed|bounced|skipped|stopped
    Column("status", String(14), nullable=False, server_default="not_contacted"),
    Column("reason", String(200), nullable=True),  # why it was skipped or stopped
    Column("step", Integer, nullable=False, server_default="0"),  # emails sent so far = next step position
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="SET NULL"), nullable=True),
    Column("next_at", UtcDateTime, nullable=True),  # earliest time of the next step; null = not scheduled yet
    Column("last_sent_at", UtcDateTime, nullable=True),
    Column("thread_message_id", String(255), nullable=True),  # Message-ID of the first email (threading)
    Column("last_message_id", String(255), nullable=True),
    Column("added_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime, nullable=True),
    UniqueConstraint("campaign_id", "lead_id"),
    # workspace_id last: the scoped page query reads only these indexes (deep pages skip no table rows)
    Index("ix_campaign_leads_list", "campaign_id", "added_at", "id", "workspace_id"),
    Index("ix_campaign_leads_status_list", "campaign_id", "status", "added_at", "id", "workspace_id"),
    # the sender: a campaign's due leads in a stable order (`next_at` null = due now), and a mailbox's
    # due follow-ups (migration 0006)
    Index("ix_campaign_leads_due", "campaign_id", "status", "next_at", "id"),
    Index("ix_campaign_leads_lead", "lead_id"),
    Index("ix_campaign_leads_mailbox", "mailbox_id", "status", "next_at"),
)

campaign_lead_counters = Table(
    "campaign_lead_counters",
    metadata,
    # Campaign leads per (campaign, status, step), kept exact by database triggers on `campaign_leads`
    # (migration 0004): lead counts by progress and `reached` per step without scanning the campaign.
    Column("campaign_id", ID, ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True),
    Column("status", String(14), primary_key=True),
    Column("step", Integer, primary_key=True),
    Column("n", BigInteger, nullable=False),
)

sends = Table(
    "sends",
    metadata,
    # The send ledger: written with its Message-ID before the SMTP hand-off, resolved after it.
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("campaign_id", ID, ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False),
    # kept (as null) when the lead is taken out of the campaign, so analytics keep what was sent
    Column("campaign_lead_id", ID, ForeignKey("campaign_leads.id", ondelete="SET NULL"), nullable=True),
    Column("lead_id", ID, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="SET NULL"), nullable=True),
    Column("step_id", ID, nullable=True),  # kept when the step is later deleted
    Column("step", Integer, nullable=False),  # position of the step when it was sent
    Column("variant_id", ID, nullable=True),
    Column("message_id", String(255), nullable=False, unique=True),
    Column("to_email", String(320), nullable=False),
    Column("subject", Text, nullable=False),
    Column("body_html", Text, nullable=False),
    Column("body_text", Text, nullable=False),
    # sending | sent | retry | failed | bounced | unknown (outcome lost in a crash; never repeated)
    Column("status", String(8), nullable=False),
    Column("error", String(1000), nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("created_at", UtcDateTime, nullable=False),
    Column("sent_at", UtcDateTime, nullable=True),
    UniqueConstraint("campaign_lead_id", "step"),
    Index("ix_sends_campaign_lead", "campaign_lead_id", "created_at"),
    Index("ix_sends_mailbox_sent", "mailbox_id", "sent_at"),
    Index("ix_sends_ws_sent", "workspace_id", "sent_at"),
    Index("ix_sends_status", "status", "created_at"),
    # the sender: first emails a day per campaign (dailyCap) and the bounce rate (migration 0006)
    Index("ix_sends_campaign_step", "campaign_id", "step", "created_at"),
    Index("ix_sends_campaign_status", "campaign_id", "status"),
)

# --- outbox ----------------------------------------------------------------------------------------------

outbox = Table(
    "outbox",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("id", ID, nullable=False, unique=True),
    _ws_fk(),
    Column("kind", String(40), nullable=False),
    Column("payload", JsonType, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("dispatched_at", UtcDateTime, nullable=True),
    Index("ix_outbox_pending", "dispatched_at", "seq"),
)

# --- inbox -----------------------------------------------------------------------------------------------

inbox_folders = Table(
    "inbox_folders",
    metadata,
    # The sync checkpoint of one folder of one mailbox: every UID up to `last_uid` under `uidvalidity` is
    # handled. Advanced in the transaction that records the messages.
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), primary_key=True),
    Column("folder", String(500), primary_key=True),  # the IMAP name as the server spells it
    _ws_fk(),
    Column("role", String(8), nullable=False),  # inbox | junk
    Column("uidvalidity", BigInteger, nullable=False),
    Column("last_uid", BigInteger, nullable=False),
    Column("synced_at", UtcDateTime, nullable=False),
)

inbox_leases = Table(
    "inbox_leases",
    metadata,
    # Which worker process reads which mailbox (several `outreach worker` processes on PostgreSQL).
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), primary_key=True),
    Column("holder", String(64), nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Index("ix_inbox_leases_expires", "expires_at"),
)

threads = Table(
    "threads",
    metadata,
    # One conversation with a lead: the campaign's emails to the lead (from `sends`) and the messages of
    # `inbox_messages`. `conversation` is its identity in the workspace (lead, campaign or -, mailbox).
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("conversation", String(130), nullable=False),
    Column("lead_id", ID, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("campaign_id", ID, ForeignKey("campaigns.id", ondelete="SET NULL"), nullable=True),
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="SET NULL"), nullable=True),
    Column("subject", Text, nullable=False, server_default=""),
    Column("kind", String(20), nullable=False),  # reply|auto_reply|out_of_office|bounce|unsubscribe_request
    Column("label_id", ID, ForeignKey("labels.id", ondelete="SET NULL"), nullable=True),
    Column("label_source", String(8), nullable=True),  # ai | rules | manual
    Column("label_reason", String(500), nullable=True),
    Column("last_message_at", UtcDateTime, nullable=False),
    Column("unread", Boolean, nullable=False, server_default="1"),
    Column("message_count", Integer, nullable=False, server_default="0"),
    Column("search_text", Text, nullable=False, server_default=""),  # lower(lead email, name, subject)
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("workspace_id", "conversation"),
    Index("ix_threads_ws_last", "workspace_id", "last_message_at", "id"),
    Index("ix_threads_ws_label", "workspace_id", "label_id", "last_message_at", "id"),
    Index("ix_threads_ws_campaign", "workspace_id", "campaign_id", "last_message_at", "id"),
    Index("ix_threads_ws_mailbox", "workspace_id", "mailbox_id", "last_message_at", "id"),
    Index("ix_threads_lead", "lead_id"),
)

inbox_messages = Table(
    "inbox_messages",
    metadata,
    # Messages read from a mailbox (direction `in`) and replies a person sent from a thread (`out`).
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("thread_id", ID, ForeignKey("threads.id", ondelete="CASCADE"), nullable=False),
    Column("mailbox_id", ID, ForeignKey("mailboxes.id", ondelete="CASCADE"), nullable=False),
    Column("direction", String(3), nullable=False),  # in | out
    Column("folder", String(500), nullable=True),
    Column("uidvalidity", BigInteger, nullable=True),
    Column("uid", BigInteger, nullable=True),
    Column("message_id", String(998), nullable=True),  # the Message-ID header as given
    Column("kind", String(20), nullable=False),
    Column("from_email", String(320), nullable=False, server_default=""),
    Column("from_name", String(200), nullable=True),
    Column("to_emails", JsonType, nullable=False),
    Column("subject", Text, nullable=False, server_default=""),
    Column("text", Text, nullable=False, server_default=""),
    Column("html", Text, nullable=True),
    Column("bounce", JsonType, nullable=True),  # {status, hard, reason, recipient}
    Column("send_id", ID, ForeignKey("sends.id", ondelete="SET NULL"), nullable=True),  # the email answered
    Column("forwarded", Boolean, nullable=False, server_default="0"),  # matched by thread, not the lead's
    Column("source", String(8), nullable=False),  # rules | ai | manual: who classified it
    Column("reason", String(500), nullable=True),
    Column("arrived_at", UtcDateTime, nullable=False),  # INTERNALDATE (in) or when sent (out)
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("mailbox_id", "folder", "uidvalidity", "uid"),
    Index("ix_inbox_messages_thread", "thread_id", "arrived_at"),
    Index("ix_inbox_messages_mailbox_msgid", "mailbox_id", "message_id"),
    Index("ix_inbox_messages_send", "send_id"),
)

# --- webhooks --------------------------------------------------------------------------------------------

webhooks = Table(
    "webhooks",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("url", String(2000), nullable=False),
    Column("description", String(500), nullable=True),
    Column("events", JsonType, nullable=False),  # event kinds
    Column("enabled", Boolean, nullable=False, server_default="1"),
    Column("disabled_reason", String(500), nullable=True),
    # MultiFernet tokens under OUTREACH_SECRET_KEY; never serialized in a response
    Column("secret_encrypted", Text, nullable=False),
    Column("previous_secret_encrypted", Text, nullable=True),  # still signed with during a rotation
    Column("previous_secret_until", UtcDateTime, nullable=True),
    Column("failing_since", UtcDateTime, nullable=True),  # first failed attempt since the last success
    Column("failed_attempts", Integer, nullable=False, server_default="0"),  # since the last success
    Column("last_delivery_at", UtcDateTime, nullable=True),
    Column("last_status", Integer, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index("ix_webhooks_ws_created", "workspace_id", "created_at", "id"),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("webhook_id", ID, ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False),
    Column("event_id", ID, nullable=False),
    Column("type", String(40), nullable=False),
    Column("body", Text, nullable=False),  # the exact body posted (UTF-8 JSON)
    Column("status", String(10), nullable=False),  # pending | delivered | failed
    Column("attempts", Integer, nullable=False, server_default="0"),  # every POST, redeliveries included
    Column("round_attempts", Integer, nullable=False, server_default="0"),  # since queued or redelivered
    # when it is due (pending only; null once delivered or failed). A worker that claims it moves it to the
    # end of its lease, so a crash between the POST and its record makes it due again (at least once).
    Column("next_attempt_at", UtcDateTime, nullable=True),
    Column("claimed_until", UtcDateTime, nullable=True),  # a worker is posting it until then
    Column("last_status", Integer, nullable=True),
    Column("last_error", String(500), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("delivered_at", UtcDateTime, nullable=True),
    UniqueConstraint("webhook_id", "event_id"),
    # the pending deliveries of one endpoint by due time (the worker claims per endpoint)
    Index(
        "ix_webhook_deliveries_due",
        "webhook_id",
        "next_attempt_at",
        sqlite_where=text("next_attempt_at IS NOT NULL"),
        postgresql_where=text("next_attempt_at IS NOT NULL"),
    ),
    # is anything due at all (the idle worker's check)
    Index(
        "ix_webhook_deliveries_next",
        "next_attempt_at",
        sqlite_where=text("next_attempt_at IS NOT NULL"),
        postgresql_where=text("next_attempt_at IS NOT NULL"),
    ),
    # an endpoint's deliveries newest first, and its 7-day counts by status, from the index alone
    Index("ix_webhook_deliveries_hook_created", "webhook_id", "created_at", "id", "status", "workspace_id"),
    Index("ix_webhook_deliveries_created", "created_at"),  # the 30-day purge
)

webhook_attempts = Table(
    "webhook_attempts",
    metadata,
    Column("id", ID, primary_key=True),
    _ws_fk(),
    Column("delivery_id", ID, ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Column("status", Integer, nullable=False),  # HTTP status; 0 = no answer
    Column("ms", Integer, nullable=False),
    Column("error", String(500), nullable=True),
    Index("ix_webhook_attempts_delivery", "delivery_id", "at"),
)

__all__ = [
    "Text",
    "api_keys",
    "campaign_lead_counters",
    "campaign_leads",
    "campaign_mailboxes",
    "campaign_steps",
    "campaign_variants",
    "campaigns",
    "domain_cache",
    "import_chunks",
    "import_queue",
    "import_seen",
    "inbox_folders",
    "inbox_leases",
    "inbox_messages",
    "invitations",
    "label_timers",
    "labels",
    "lead_counters",
    "lead_imports",
    "lead_labels",
    "leads",
    "leads_fts",
    "leads_fts_vocab",
    "list_leads",
    "lists",
    "mailboxes",
    "members",
    "metadata",
    "oauth_clients",
    "oauth_codes",
    "oauth_grants",
    "oauth_tokens",
    "outbox",
    "sends",
    "suppressions",
    "threads",
    "users",
    "webhook_attempts",
    "webhook_deliveries",
    "webhooks",
    "workspaces",
]
