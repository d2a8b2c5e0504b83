"""The link domain (docs/link-domain.md): at most one per workspace, a host name no two workspaces share."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, String, Table

from outreach_core.kernel.db.tables.base import ID, metadata
from outreach_core.kernel.db.types import UtcDateTime

link_domains = Table(
    "link_domains",
    metadata,
    # one link domain a workspace
    Column("workspace_id", ID, ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True),
    Column("hostname", String(253), nullable=False, unique=True),  # lower-case A-labels, no final dot
    Column("status", String(12), nullable=False),  # pending_dns | pending_tls | active | failed
    Column("dns", String(8), nullable=False),  # ok | missing | wrong | unknown
    Column("tls", String(8), nullable=False),  # active | pending | failed | none
    Column("reason", String(500), nullable=True),  # what the last check saw, when something is not right
    # the schedule counts from here: when the host name was set, or a check asked for by a person
    Column("since", UtcDateTime, nullable=False),
    Column("next_check_at", UtcDateTime, nullable=True),  # null: the worker leaves it (failed)
    Column("checked_at", UtcDateTime, nullable=True),
    Column("verified_at", UtcDateTime, nullable=True),  # when it last became active
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_by", ID, nullable=True),
    Index("ix_link_domains_next_check_at", "next_check_at"),
)
