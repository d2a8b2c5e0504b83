"""Sync checkpoints: per mailbox folder, the UIDVALIDITY and the highest UID handled."""

from __future__ import annotations

from dataclasses import dataclass

from outreach_core.context import SystemContext, system_scope
from outreach_core.db.tables import inbox_folders, mailboxes


@dataclass(frozen=True)
class Checkpoint:
    folder: str
    role: str
    uidvalidity: int
    last_uid: int


async def checkpoints(ctx: SystemContext, mailbox_id: str) -> dict[str, Checkpoint]:
    """The saved checkpoints of a mailbox, by folder name."""
    stmt = system_scope(inbox_folders).select().where(inbox_folders.c.mailbox_id == mailbox_id)
    rows = await ctx.conn.execute(stmt)
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
    saved = (
        await ctx.conn.execute(
            system_scope(inbox_folders)
            .select(inbox_folders.c.uidvalidity, inbox_folders.c.last_uid)
            .where(inbox_folders.c.mailbox_id == mailbox_id, inbox_folders.c.folder == folder)
            .with_for_update()
        )
    ).first()
    if saved is None:
        await ctx.conn.execute(
            system_scope(inbox_folders).insert(
                {
                    "mailbox_id": mailbox_id,
                    "folder": folder,
                    "workspace_id": workspace_id,
                    "role": role,
                    "uidvalidity": uidvalidity,
                    "last_uid": last_uid,
                    "synced_at": ctx.now,
                }
            )
        )
    else:
        keep = saved.uidvalidity == uidvalidity and saved.last_uid > last_uid
        await ctx.conn.execute(
            system_scope(inbox_folders)
            .update()
            .where(inbox_folders.c.mailbox_id == mailbox_id, inbox_folders.c.folder == folder)
            .values(
                role=role,
                uidvalidity=uidvalidity,
                last_uid=saved.last_uid if keep else last_uid,
                synced_at=ctx.now,
            )
        )
    await ctx.conn.execute(
        system_scope(mailboxes)
        .update()
        .where(mailboxes.c.id == mailbox_id)
        .values(last_synced_at=ctx.now, sync_error=None)
    )
