"""Leads and what organises them: lists, labels and their timers, suppressions, imports, the search index
and the domain cache."""

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
    column,
    table,
    text,
)

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import JsonType, UtcDateTime

leads = Table(
    "leads",
    metadata,
    Column("id", ID, primary_key=True),
    # the foreign key to `workspaces` is SQLite's only (PostgreSQL, migration 0035: a workspace's deletion
    # deletes its leads by trigger, every writer of leads holds the workspace, `targets.lead_owner`)
    ws_fk(),
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

lead_search = Table(
    "lead_search",
    metadata,
    # PostgreSQL: the search text of each indexed lead (= `leads.search_index`), under the two GIN indexes
    # (pg_trgm `ix_lead_search_trgm` and the short terms' `ix_lead_search_short`, raw DDL in migration 0021),
    # filled by the search-index worker after an import is stored, so that storing pays no GIN index
    # (issue 31). A trigger on `leads` keeps `text` equal to `search_index`. Unused on SQLite (FTS5).
    Column("lead_id", ID, ForeignKey("leads.id", ondelete="CASCADE"), primary_key=True),
    ws_fk(),
    Column("text", Text, nullable=False),
)

lead_search_pending = Table(
    "lead_search_pending",
    metadata,
    # PostgreSQL: leads an import stored that are not in `lead_search` yet; search finds them by testing
    # `search_text` (a few seconds' worth), the worker moves them. No foreign key to `leads` (storing pays no
    # check); a deleted lead's row is dropped by the worker. The one to `workspaces` is SQLite's only, as for
    # `leads` (migration 0035: a deleted workspace's rows are deleted by its trigger).
    Column("lead_id", ID, primary_key=True),
    ws_fk(),
    Index("ix_lead_search_pending_ws", "workspace_id"),
)

lead_counters = Table(
    "lead_counters",
    metadata,
    # Leads per (workspace, status, verify_status, esp), kept exact by database triggers on `leads`
    # (migration 0003; on SQLite the leads an import stores are counted by its merge, migration 0034), so
    # stats and unfiltered totals never scan a million rows.
    Column("workspace_id", ID, ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True),
    Column("status", String(16), primary_key=True),
    Column("verify_status", String(12), primary_key=True),
    Column("esp", String(12), primary_key=True),
    Column("n", BigInteger, nullable=False),
)

lead_counter_deltas = Table(
    "lead_counter_deltas",
    metadata,
    # PostgreSQL: what each statement on `leads` changed in `lead_counters`, appended by the statement
    # triggers (migration 0013) instead of updating the one hot counter row; folded into `lead_counters` by
    # the workers (`targets.lead_counts.fold_lead_counters`) and added to it wherever counters are read.
    # SQLite (one writer at a time) keeps updating `lead_counters` directly and leaves this empty.
    ws_fk(),
    Column("status", String(16), nullable=False),
    Column("verify_status", String(12), nullable=False),
    Column("esp", String(12), nullable=False),
    Column("n", BigInteger, nullable=False),
    Index("ix_lead_counter_deltas_workspace", "workspace_id"),
)

lists = Table(
    "lists",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
    Column("name", String(120), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    # how many leads are on the list, kept by triggers on `list_leads` (migration 0037); on PostgreSQL
    # plus the list's pending `list_size_deltas` (`targets.list_sizes`)
    Column("members", BigInteger, nullable=False, server_default="0"),
    UniqueConstraint("workspace_id", "name"),
)

list_size_deltas = Table(
    "list_size_deltas",
    metadata,
    # PostgreSQL: what each statement on `list_leads` changed in its lists' `members`, appended by the
    # statement triggers (migration 0037) instead of updating the list's row; folded into `lists.members`
    # by the workers (`targets.list_sizes.fold_list_sizes`) and added to it wherever a list's size is read.
    # No foreign keys: a deleted list's (or workspace's) deltas are dropped by the fold. SQLite (one writer
    # at a time) updates `lists.members` directly and leaves this empty.
    Column("list_id", ID, nullable=False),
    Column("workspace_id", ID, nullable=False),
    Column("n", BigInteger, nullable=False),
    Index("ix_list_size_deltas_list", "list_id"),
)

list_leads = Table(
    "list_leads",
    metadata,
    # no foreign keys (migrations 0022 and 0032): the statement deleting leads or lists deletes their
    # memberships (triggers on `leads` and `lists`), every writer of memberships holds its list's row
    # (`list_members.lock_list`), and an import's memberships cost no lookup per row. Triggers on it keep
    # `lists.members` (migration 0037, `targets.list_sizes`).
    Column("list_id", ID, primary_key=True),
    Column("lead_id", ID, primary_key=True),
    Column("workspace_id", ID, nullable=False),
    Column("added_at", UtcDateTime, nullable=False),
    # the lead's `created_at` (which never changes), copied by every writer of memberships: a list's page
    # sorted by createdAt reads its keys from `ix_list_leads_order` alone (migration 0033)
    Column("lead_created_at", UtcDateTime, nullable=False),
    Index("ix_list_leads_lead", "lead_id"),
    # a list's members in the default sort order (`leads.operations`); in place of `ix_list_leads_members`
    # (list_id, lead_id, workspace_id). A list's count is kept on `lists` (migration 0037).
    Index("ix_list_leads_order", "list_id", "lead_created_at", "lead_id", "workspace_id"),
)

labels = Table(
    "labels",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
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
    ws_fk(),
    Column("labeled_at", UtcDateTime, nullable=False),
    Index("ix_lead_labels_label", "label_id", "lead_id"),
)

label_timers = Table(
    "label_timers",
    metadata,
    Column("id", ID, primary_key=True),
    ws_fk(),
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
    ws_fk(),
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
    ws_fk(),
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
    Column("failure_reason", String(300), nullable=True),  # why it ended `failed` (migration 0020)
    Column("merged_at", UtcDateTime, nullable=True),  # a part of it last merged (storing comes first)
    # SQLite: the last part of the side file (`kernel/db/side_queue.py`) merged, None before the first (0038)
    Column("merged_seq", Integer, nullable=True),
    Index("ix_lead_imports_ws_created", "workspace_id", "created_at"),
    Index("ix_lead_imports_status", "status"),
)

import_chunks = Table(
    "import_chunks",
    metadata,
    Column("import_id", ID, ForeignKey("lead_imports.id", ondelete="CASCADE"), primary_key=True),
    Column("chunk_hash", String(64), primary_key=True),  # sha256 of the canonical chunk: retries are no-ops
    ws_fk(),
    Column("created_at", UtcDateTime, nullable=False),
)

import_queue = Table(
    "import_queue",
    metadata,
    # Received import rows waiting for the import worker, one part per chunk (see imports/operations.py), in
    # storage form (snake_case keys); a part is deleted in the transaction that merges it into `leads`.
    Column("import_id", ID, ForeignKey("lead_imports.id", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),  # merge order within the import
    ws_fk(),
    Column("rows", JsonType, nullable=False),
    # how many of `rows` are merged: SQLite merges a part a slice per transaction (migration 0036)
    Column("merged_rows", Integer, nullable=False, server_default=text("0")),
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_import_queue_created", "created_at"),
    # the merge's claim without reading the parts (on SQLite `created_at` lies after `rows`, migration 0034)
    Index("ix_import_queue_waiting", "workspace_id", "import_id", "created_at"),
)

import_seen = Table(
    "import_seen",
    metadata,
    # both foreign keys are SQLite's only (PostgreSQL, migration 0039: a deleted import's rows are deleted by
    # trigger, every merge holds the workspace, `targets.lead_owner`)
    Column("import_id", ID, ForeignKey("lead_imports.id", ondelete="CASCADE"), primary_key=True),
    # addresses this import met but did not create (skipped, updated, suppressed): a later row with one is a
    # duplicate. Addresses it created are told by `leads.import_id`.
    Column("email", String(320), primary_key=True),
    ws_fk(),
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

# Mail domains the import merge met without a `domain_cache` entry while storing, for the `enrich` worker to
# look up before the parts still queued need them (`enrichment.pipeline`, migration 0040). A table, not
# memory: the merge and that worker run in different processes under `outreach serve`, and a domain noted
# here survives a restart of either.
domain_lookups_wanted = Table(
    "domain_lookups_wanted",
    metadata,
    Column("domain", String(253), primary_key=True),
    Column("noted_at", UtcDateTime, nullable=False),
    # first noted first taken (`resolve_waiting_domains`), in one order
    Index("ix_domain_lookups_wanted_noted_at", "noted_at", "domain"),
)
