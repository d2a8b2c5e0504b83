"""Reading and writing the workspace's one offer profile."""

from __future__ import annotations

from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import offer_profiles
from outreach_core.offer.schemas import OfferProfile, StoredOfferProfile

FIELDS = tuple(OfferProfile.model_fields)


async def offer_profile_row(ctx: WorkspaceContext) -> Any | None:
    """The saved profile's row, or None when none has been saved."""
    return (await ctx.conn.execute(scoped(ctx, offer_profiles).select())).one_or_none()


async def stored_profile(ctx: WorkspaceContext) -> StoredOfferProfile:
    row = await offer_profile_row(ctx)
    if row is None:
        return StoredOfferProfile(saved=False, source_url=None, updated_at=None)
    return StoredOfferProfile.from_row(row, saved=True)


async def write_profile(ctx: WorkspaceContext, profile: OfferProfile, source_url: str | None) -> None:
    """Save `profile` as the workspace's offer profile, replacing the one saved before (one statement each
    way: delete and insert, in the caller's transaction)."""
    table = scoped(ctx, offer_profiles)
    await ctx.conn.execute(table.delete())
    values = {name: getattr(profile, name) for name in FIELDS}
    await ctx.conn.execute(
        table.insert({**values, "source_url": source_url, "updated_at": ctx.now, "updated_by": ctx.user_id})
    )
