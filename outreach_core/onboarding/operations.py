"""Onboarding: a new workspace for the caller, the onboarding answers, and the offer drafted from the
company's website (docs/onboarding.md)."""

from __future__ import annotations

from typing import Any

from outreach_core.billing.ai_allowance import record_ai_draft
from outreach_core.deliverability.rules import normalize_domain as checkable_domain
from outreach_core.deliverability.store import register_sending_domains
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import workspaces
from outreach_core.kernel.errors import InvalidInput
from outreach_core.kernel.wire import Ok
from outreach_core.offer.store import offer_profile_row, write_profile
from outreach_core.onboarding.prepare import DraftPrepared
from outreach_core.onboarding.rules import normalize_domain
from outreach_core.onboarding.schemas import (
    CreatedWorkspace,
    CreateWorkspaceIn,
    DraftOfferIn,
    OfferDraft,
    SaveOnboardingIn,
)
from outreach_core.workspace.setup import ensure_slug_free, new_workspace


def _domain(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    domain = normalize_domain(value)
    if domain is None:
        raise InvalidInput.field("sendingDomain", "not a domain name (like acme.com)")
    return domain


async def create_workspace(ctx: WorkspaceContext, body: CreateWorkspaceIn) -> CreatedWorkspace:
    """Create a new workspace with you as its owner, and get a first API key for it.

    `slug` must be unused on this server (409 otherwise). The new workspace starts empty, without a plan.
    The answer's `apiKey` is shown once: use it (Authorization: Bearer <apiKey>) to act in the new
    workspace; the key you called with stays in its own workspace. Any member may create a workspace."""
    await ensure_slug_free(ctx, body.slug)
    created = await new_workspace(
        ctx,
        ctx.user_id,
        body.name,
        body.slug,
        key_name="onboarding",
        audience=body.audience,
        sending_domain=_domain(body.sending_domain),
    )
    return CreatedWorkspace(slug=created.slug, workspace_id=created.workspaceId, api_key=created.apiKey)


async def save_onboarding(ctx: WorkspaceContext, body: SaveOnboardingIn) -> Ok:
    """Save the onboarding answers: the domain emails will come from and the emails expected a month.

    `sendingDomain` accepts a domain, a URL or an address (its domain is kept; null clears it, leaving it
    out keeps it); `expectedVolume` is 0 to 100000000. Owners and admins only."""
    values: dict[str, Any] = {"expected_volume": body.expected_volume}
    if "sending_domain" in body.model_fields_set:
        values["sending_domain"] = _domain(body.sending_domain)
    await ctx.conn.execute(scoped(ctx, workspaces).update().values(**values))
    if values.get("sending_domain"):
        await _add_sending_domain(ctx, values["sending_domain"])
    return Ok()


async def _add_sending_domain(ctx: WorkspaceContext, domain: str) -> None:
    """The answer's domain becomes a sending domain (graded by the `domains` worker before any mailbox is
    connected) when the domain checker accepts it; a name it refuses stays with the answers only."""
    try:
        checked = checkable_domain(domain)
    except ValueError:
        return
    await register_sending_domains(ctx, [checked])


async def draft_offer(ctx: WorkspaceContext, body: DraftOfferIn, prepared: DraftPrepared) -> OfferDraft:
    """Draft the workspace's offer profile from its website: fetch the page, read its text, and write the
    profile with AI, or without AI from the page's title, description and headings (the answer says which).

    Only public addresses are fetched (redirects too), HTML pages up to 2 MB within 10 seconds; a page
    marked noindex is not read. The draft is saved as the offer profile when none was saved before;
    otherwise it is only returned, to review and save with save_offer_profile. An AI draft counts against
    the plan's monthly AI drafts (not with the workspace's own AI key); without a plan the draft is made
    without AI. When the allowance is used up the call is refused with its message and nothing is drafted."""
    if prepared.drafted == "ai":
        await record_ai_draft(ctx, "draft_offer", own_key=prepared.own_key)
    saved = False
    if await offer_profile_row(ctx) is None:
        await write_profile(ctx, prepared.profile, prepared.url[:300])
        saved = True
    return OfferDraft(
        profile=prepared.profile,
        url=prepared.url,
        drafted=prepared.drafted,
        saved=saved,
        message=prepared.message,
        problems=prepared.problems,
    )
