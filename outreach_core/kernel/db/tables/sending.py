"""Mailboxes, campaigns (sequence, mailboxes, campaign leads and their counters) and the send ledger."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import UtcDateTime

sending_ips = Table(
    "sending_ips",
    metadata,
    Column("id", ID, primary_key=True),
    Column("proxy_encrypted", Text, nullable=False),  # socks5://[user:pass@]host:port, encrypted
    Column("proxy_host", String(300), nullable=False),  # host:port, shown to operators (no credentials)
    Column("kind", String(10), nullable=False),  # shared | dedicated
    Column("country", String(2), nullable=True),
    Column("ip", String(45), nullable=True),  # the public address mail leaves from, as the operator said
    Column("capacity", Integer, nullable=False),  # mailboxes it carries at most
    Column("dedicated_to", ID, nullable=True),  # the workspace a dedicated IP serves (null: free)
    Column("created_at", UtcDateTime, nullable=False),
)
"""Outbound SOCKS5 proxies the operator registers (`outreach ip add`): the sending IPs of routed mailboxes
(issue 32; `outreach_core/mailboxes/routes.py`). Global, not workspace-owned: a shared IP carries the
mailboxes of many workspaces, a dedicated one those of the workspace in `dedicated_to`."""

mailboxes = Table(
    "mailboxes",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
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
    # google_oauth / microsoft (issue 32 item 3, docs/mailboxes.md "OAuth"): the grant's tokens, encrypted
    # with their own purpose (`mailboxes/oauth_tokens.py`); null for password mailboxes
    Column("oauth_encrypted", Text, nullable=True),
    Column("inbox_poll", Boolean, nullable=False, server_default="0"),
    Column("sending_route", String(10), nullable=False, server_default="own"),  # own|shared|dedicated|waiting
    Column("sending_ip_id", ID, nullable=True),  # the sending IP (proxy) of a shared or dedicated route
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
    Index("ix_mailboxes_sending_ip", "sending_ip_id"),
)

# --- campaigns -------------------------------------------------------------------------------------------

campaigns = Table(
    "campaigns",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
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
    ws_fk(),
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
    ws_fk(),
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
    ws_fk(),
    Index("ix_campaign_mailboxes_mailbox", "mailbox_id"),
)

campaign_leads = Table(
    "campaign_leads",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
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
    ws_fk(),
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
    # Click and open tracking (docs/tracking.md, migration 0023): first time and count of the opens and clicks
    # of people; those flagged as scanners, prefetchers and privacy proxies are counted apart.
    Column("opened_at", UtcDateTime, nullable=True),
    Column("open_count", Integer, nullable=False, server_default="0"),
    Column("clicked_at", UtcDateTime, nullable=True),
    Column("click_count", Integer, nullable=False, server_default="0"),
    Column("flagged_opens", Integer, nullable=False, server_default="0"),
    Column("flagged_clicks", Integer, nullable=False, server_default="0"),
    UniqueConstraint("campaign_lead_id", "step"),
    Index("ix_sends_campaign_lead", "campaign_lead_id", "created_at"),
    Index("ix_sends_mailbox_sent", "mailbox_id", "sent_at"),
    Index("ix_sends_ws_sent", "workspace_id", "sent_at"),
    Index("ix_sends_status", "status", "created_at"),
    # the sender: first emails a day per campaign (dailyCap) and the bounce rate (migration 0006)
    Index("ix_sends_campaign_step", "campaign_id", "step", "created_at"),
    Index("ix_sends_campaign_status", "campaign_id", "status"),
    # the inbox's match by address: the latest email a mailbox sent a lead (migration 0015)
    Index("ix_sends_lead_mailbox", "workspace_id", "lead_id", "mailbox_id", "sent_at"),
)
