"""The offer profile: read it, save it (docs/writing.md)."""

from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.offer.schemas import OfferProfile, StoredOfferProfile
from outreach_core.offer.store import offer_profile_row, stored_profile, write_profile


async def get_offer_profile(ctx: WorkspaceContext) -> StoredOfferProfile:
    """Show the workspace's offer profile: company, product, audience, problem, proof, cta, tone, avoid.

    AI writing (write_sequence) drafts only from these facts and the leads' fields. Before one is saved
    every text field is empty, `tone` is plain and `saved` is false."""
    return await stored_profile(ctx)


async def save_offer_profile(ctx: WorkspaceContext, body: OfferProfile) -> StoredOfferProfile:
    """Save the workspace's offer profile, replacing the whole of it (fields left out become empty, `tone`
    plain).

    Limits: company 120 characters, product, audience, problem and avoid 1000, proof 2000 (one point per
    line), cta 300; tone is plain, friendly, direct or formal. Emails drafted with AI cite only what `proof`
    says and never use what `avoid` lists."""
    row = await offer_profile_row(ctx)
    await write_profile(ctx, body, row.source_url if row is not None else None)
    return await stored_profile(ctx)
