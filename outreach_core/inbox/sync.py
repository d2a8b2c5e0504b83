"""Reading one mailbox's folders from their checkpoints and handing the messages to `ingest_batch`
(docs/inbox.md, "The inbox worker").

Per folder: EXAMINE it; when the saved UIDVALIDITY still holds, read the UIDs above the checkpoint; else (the
first sync, or the server renumbered the folder) search from the mailbox's `inbox_since` day (`UID SEARCH
SINCE`), the folder read again from there (the core matches what it already has by Message-ID). Messages
are fetched in batches of `OUTREACH_INBOX_BATCH_SIZE`, each batch one `ingest_batch` (one transaction with
its checkpoint), so a crash or a dropped connection re-reads at most the batch that was not recorded. What
arrived before `inbox_since` (INTERNALDATE, never the `Date` header) is skipped; a message the server does
not return is logged with the mailbox and UID and skipped (the checkpoint moves past it).

After each completed sync of a mailbox the worker calls `mailbox_synced` (`lastSyncedAt` now, `syncError`
cleared) for the first sync of every connection and then at most every `SYNCED_MARK_S` seconds, so a quiet
mailbox shows it is read and an error of a dropped connection does not stay once a sync worked again.

Also here: what a login or a sync failure does to the mailbox (`syncError`, and after
`LOGIN_FAILURES_FOR_ERROR` refused logins in a row the status `error`, undone by the next working login).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

import structlog

from outreach_core.inbox.folders import Checkpoint, checkpoints
from outreach_core.inbox.leases import InboxMailbox
from outreach_core.inbox.pipeline import Fetched, FolderBatch, ingest_batch
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import mailboxes
from outreach_core.kernel.ports import InboxFolder, InboxSession

if TYPE_CHECKING:
    from outreach_core.kernel.endpoint import Background

Ingest = Callable[["Background", FolderBatch], Awaitable[int]]
LOGIN_FAILURES_FOR_ERROR = 3
"""Refused logins in a row after which the mailbox becomes `error`."""
REASON_LIMIT = 500
SYNCED_MARK_S = 60.0
"""`mailbox_synced` is written at most this often per mailbox (besides the first sync of each connection)."""

_log = structlog.get_logger()


async def sync_mailbox(
    runtime: Background,
    session: InboxSession,
    mailbox: InboxMailbox,
    folders: Sequence[InboxFolder],
    *,
    ingest: Ingest = ingest_batch,
    read: Callable[[Awaitable[dict[str, Checkpoint]]], Awaitable[dict[str, Checkpoint]]] | None = None,
) -> int:
    """Sync `folders` in order (the last one stays open, for IDLE); returns the messages handed over. `read`
    wraps the transaction that reads the checkpoints (the worker makes it wait its turn)."""
    work = runtime.system_read(checkpoints, mailbox.id)
    saved = await (work if read is None else read(work))
    handed = 0
    for folder in folders:
        handed += await sync_folder(runtime, session, mailbox, folder, saved.get(folder.name), ingest=ingest)
    return handed


async def sync_folder(
    runtime: Background,
    session: InboxSession,
    mailbox: InboxMailbox,
    folder: InboxFolder,
    saved: Checkpoint | None,
    *,
    ingest: Ingest = ingest_batch,
) -> int:
    """One folder from its checkpoint `saved` (see the module docstring); returns the messages handed over."""
    settings = runtime.settings
    status = await session.examine(folder.name)

    def batch(last_uid: int, messages: list[Fetched]) -> FolderBatch:
        return FolderBatch(
            workspace_id=mailbox.workspace_id,
            mailbox_id=mailbox.id,
            folder=folder.name,
            role=folder.role,
            uidvalidity=status.uidvalidity,
            last_uid=last_uid,
            messages=messages,
        )

    if saved is not None and saved.uidvalidity == status.uidvalidity:
        start = saved.last_uid + 1
        if status.uidnext is not None and status.uidnext <= start:
            return 0
        uids = await session.uids_from(start)
    else:
        if saved is not None:
            _log.warning(
                "inbox_uidvalidity_changed",
                mailbox=mailbox.id,
                folder=folder.name,
                before=saved.uidvalidity,
                now=status.uidvalidity,
            )
        # SINCE compares days in the server's zone: a day earlier, then INTERNALDATE decides exactly
        uids = await session.uids_since((mailbox.inbox_since - timedelta(days=1)).date())
        if not uids:
            # nothing recent: start after what is there, so later syncs only search above it
            await ingest(runtime, batch(max((status.uidnext or 1) - 1, 0), []))
            return 0
    handed = 0
    size = settings.inbox_batch_size
    for i in range(0, len(uids), size):
        chunk = uids[i : i + size]
        fetched = await session.fetch(chunk, settings.inbox_fetch_max_bytes)
        got = {m.uid for m in fetched}
        for uid in chunk:
            if uid not in got:
                _log.warning("inbox_message_skipped", mailbox=mailbox.id, folder=folder.name, uid=uid)
        messages = [
            Fetched(m.uid, m.arrived_at, m.size, m.raw)
            for m in fetched
            if m.arrived_at >= mailbox.inbox_since
        ]
        await ingest(runtime, batch(chunk[-1], messages))
        handed += len(messages)
    return handed


# --- what failures do to the mailbox ------------------------------------------------------------------------


async def login_failed(ctx: SystemContext, mailbox_id: str, reason: str, *, refused: bool) -> bool:
    """Record a failed connection or login as `syncError`. A login the server refused (`refused`) counts
    toward `LOGIN_FAILURES_FOR_ERROR`; at that count an active mailbox becomes `error` with a
    `statusReason` and `inbox_error` set. Returns whether it did now."""
    reason = reason[:REASON_LIMIT]
    row = (
        await ctx.conn.execute(
            system_scope(mailboxes)
            .select(mailboxes.c.status, mailboxes.c.inbox_failures)
            .where(mailboxes.c.id == mailbox_id)
        )
    ).first()
    if row is None:
        return False
    values: dict[str, object] = {"sync_error": reason}
    failures = row.inbox_failures + 1 if refused else row.inbox_failures
    values["inbox_failures"] = failures
    became_error = refused and failures >= LOGIN_FAILURES_FOR_ERROR and row.status == "active"
    if became_error:
        values.update(
            status="error",
            status_reason=f"the inbox could not log in {failures} times in a row: {reason}"[:REASON_LIMIT],
            inbox_error=True,
            updated_at=ctx.now,
        )
    await ctx.conn.execute(
        system_scope(mailboxes).update().where(mailboxes.c.id == mailbox_id).values(**values)
    )
    return became_error


async def login_worked(ctx: SystemContext, mailbox_id: str) -> bool:
    """A login worked: the failure count starts again and a mailbox in an `error` the inbox set is active
    again (its reason and `syncError` cleared). Returns whether it recovered now."""
    row = (
        await ctx.conn.execute(
            system_scope(mailboxes)
            .select(mailboxes.c.status, mailboxes.c.inbox_failures, mailboxes.c.inbox_error)
            .where(mailboxes.c.id == mailbox_id)
        )
    ).first()
    if row is None or (row.inbox_failures == 0 and not row.inbox_error):
        return False
    values: dict[str, object] = {"inbox_failures": 0, "inbox_error": False}
    recovered = row.status == "error" and bool(row.inbox_error)
    if recovered:
        values.update(status="active", status_reason=None, sync_error=None, updated_at=ctx.now)
    await ctx.conn.execute(
        system_scope(mailboxes).update().where(mailboxes.c.id == mailbox_id).values(**values)
    )
    return recovered


async def mailbox_synced(ctx: SystemContext, mailbox_id: str) -> None:
    """A sync of the mailbox completed: `lastSyncedAt` is now and `syncError` cleared."""
    await ctx.conn.execute(
        system_scope(mailboxes)
        .update()
        .where(mailboxes.c.id == mailbox_id)
        .values(last_synced_at=ctx.now, sync_error=None)
    )


async def sync_failed(ctx: SystemContext, mailbox_id: str, reason: str) -> None:
    """A sync failed after the login (connection lost, timeout, a command refused): `syncError`."""
    await ctx.conn.execute(
        system_scope(mailboxes)
        .update()
        .where(mailboxes.c.id == mailbox_id)
        .values(sync_error=reason[:REASON_LIMIT])
    )
