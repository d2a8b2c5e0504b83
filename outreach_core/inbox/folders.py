"""Sync checkpoints: per mailbox folder, the UIDVALIDITY and the highest UID handled."""

from __future__ import annotations

from dataclasses import dataclass

from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import inbox_folders, mailboxes


@dataclass(frozen=True)
class Checkpoint:
    folder: str
    role: str
    uidvalidity: int
    last_uid: int


async def checkpoints(ctx: SystemContext, mailbox_id: str) -> dict[str, Checkpoint]:
    """The saved checkpoints of a mailbox, by folder name."""
    rows = await ctx.conn.execute(
        system_scope(inbox_folders).select().where(inbox_folders.c.mailbox_id == mailbox_id)
    )
    return {r.folder: Checkpoint(r.folder, r.role, r.uidvalidity, r.last_uid) for r in rows}


async def advance_checkpoint(
    ctx: SystemContext,
    workspace_id: str,
    mailbox_id: str,
    folder: str,
    role: str,
    uidvalidity: int,
    last_uid: int,
) -> None:
    """Save that every UID up to `last_uid` under `uidvalidity` is handled, and that the mailbox was read now
    (clearing `syncError`). Never moves a checkpoint backwards under the same UIDVALIDITY."""
    folders = system_scope(inbox_folders)
    this_folder = (inbox_folders.c.mailbox_id == mailbox_id, inbox_folders.c.folder == folder)
    saved = (
        await ctx.conn.execute(
            folders.select(inbox_folders.c.uidvalidity, inbox_folders.c.last_uid)
            .where(*this_folder)
            .with_for_update()
        )
    ).first()
    values = {"role": role, "uidvalidity": uidvalidity, "last_uid": last_uid, "synced_at": ctx.now}
    if saved is None:
        row = {"mailbox_id": mailbox_id, "folder": folder, "workspace_id": workspace_id, **values}
        await ctx.conn.execute(folders.insert(row))
    else:
        if saved.uidvalidity == uidvalidity and saved.last_uid > last_uid:
            values["last_uid"] = saved.last_uid
        await ctx.conn.execute(folders.update().where(*this_folder).values(values))
    await ctx.conn.execute(
        system_scope(mailboxes)
        .update()
        .where(mailboxes.c.id == mailbox_id)
        .values(last_synced_at=ctx.now, sync_error=None)
    )
