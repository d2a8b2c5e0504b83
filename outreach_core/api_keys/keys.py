"""Making an API key: the secret, shown once, and its stored row (hashed). Used by `create_api_key` and by
the set-up commands (`workspace/setup.py`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from outreach_core.api_keys.rules import generate_key, hash_secret, key_start
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import api_keys
from outreach_core.kernel.ids import new_id


async def insert_key(
    ctx: WorkspaceContext, user_id: str, name: str | None, expires_in_days: int | None
) -> tuple[str, str]:
    """Store a new key (hashed) for `user_id`; returns (id, secret). Used by create and by set-up commands."""
    key = generate_key()
    key_id = new_id("key")
    expires_at: datetime | None = ctx.now + timedelta(days=expires_in_days) if expires_in_days else None
    row = {
        "id": key_id,
        "created_by": user_id,
        "name": name,
        "start": key_start(key),
        "key_hash": hash_secret(key),
        "created_at": ctx.now,
        "expires_at": expires_at,
    }
    await ctx.conn.execute(scoped(ctx, api_keys).insert(row))
    return key_id, key
