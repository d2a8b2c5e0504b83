"""Google and Microsoft mailboxes over OAuth (issue 32 item 3, docs/mailboxes.md "OAuth"): the single-use
`state` of each connection started with POST /mailboxes/oauth/start, bound to the workspace and the person,
with the PKCE verifier (encrypted) the callback sends to the token endpoint."""

from __future__ import annotations

from sqlalchemy import Column, Index, String, Table, Text

from outreach_core.kernel.db.tables.base import ID, metadata, ws_fk
from outreach_core.kernel.db.types import UtcDateTime

mailbox_oauth_states = Table(
    "mailbox_oauth_states",
    metadata,
    Column("id", String(64), primary_key=True),  # SHA-256 (hex) of the state sent to the provider
    ws_fk(),
    Column("user_id", ID, nullable=False),
    Column("role", String(8), nullable=False),
    Column("provider", String(16), nullable=False),  # google_oauth | microsoft
    Column("verifier_encrypted", Text, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Index("ix_mailbox_oauth_states_ws", "workspace_id"),
)
