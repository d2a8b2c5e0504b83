"""`write_sequence`'s pre-transaction step: gather the facts in a short read, ask the AI (with one retry),
validate the answer, all with no transaction open."""

from __future__ import annotations

from dataclasses import dataclass, field

from outreach_core.ai.answers import ask_json
from outreach_core.ai.keys import OwnKey, choose_ai, own_key
from outreach_core.billing.ai_allowance import ensure_ai_draft_left
from outreach_core.billing.plan import require_active_plan
from outreach_core.campaigns.store import campaign_row, load_steps
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_leads, leads
from outreach_core.kernel.endpoint import Outside
from outreach_core.kernel.errors import AiUnavailable, NotFound, OfferProfileRequired
from outreach_core.mail.plaintext import html_to_text
from outreach_core.offer.schemas import OfferProfile
from outreach_core.offer.store import offer_profile_row
from outreach_core.writing.checklist import Draft
from outreach_core.writing.prompts import prompt, read_emails
from outreach_core.writing.schemas import WriteIn

CUSTOM_KEY_SAMPLE = 200
"""Campaign leads whose custom fields name the custom variables the AI may use."""


@dataclass(frozen=True)
class WritePrepared:
    """The validated drafts with their waitDays (none when the AI's answers could not be used), the
    problems met, whether the workspace's own key wrote them, and the profile's text for the checklist."""

    drafts: list[tuple[Draft, int]]
    problems: list[str]
    own_key: bool
    profile: OfferProfile
    custom_keys: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Facts:
    profile: OfferProfile
    key: OwnKey | None
    custom_keys: list[str]
    current: tuple[int, str, str] | None


async def _facts(ctx: WorkspaceContext, id: str, body: WriteIn) -> _Facts:
    await require_active_plan(ctx)
    await campaign_row(ctx, id)
    row = await offer_profile_row(ctx)
    if row is None:
        raise OfferProfileRequired(
            "Writing with AI needs a saved offer profile: save one with PUT /api/v1/offer-profile (tool "
            "save_offer_profile), or draft it from the website with POST /api/v1/onboarding/draftOffer (tool "
            "draft_offer)."
        )
    profile = OfferProfile.from_row(row)
    key = await own_key(ctx)
    await ensure_ai_draft_left(ctx, own_key=key is not None)
    current = None
    if body.variant_id is not None:
        for position, step in enumerate(await load_steps(ctx, id)):
            for v in step.variants:
                if v.id == body.variant_id:
                    current = (position, v.subject, html_to_text(v.body))
        if current is None:
            raise NotFound("variant", body.variant_id)
    customs = (
        await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .select(leads.c.custom)
            .join(leads, leads.c.id == campaign_leads.c.lead_id)
            .where(campaign_leads.c.campaign_id == id)
            .limit(CUSTOM_KEY_SAMPLE)
        )
    ).scalars()
    keys = sorted({str(k) for custom in customs if isinstance(custom, dict) for k in custom})
    return _Facts(profile, key, keys, current)


async def prepare_write_sequence(outside: Outside, *, id: str, body: WriteIn) -> WritePrepared:
    facts = await outside.read(_facts, id, body)
    choice = choose_ai(outside.ports, facts.key)
    if choice.chat is None:
        raise AiUnavailable(
            "No AI is available: this server has no AI endpoint (OUTREACH_AI_BASE_URL) and the workspace no "
            "AI key of its own (PUT /api/v1/settings/ai-key, tool set_ai_key)."
        )
    count = body.steps if body.mode == "sequence" else 1
    first = 0 if facts.current is None else facts.current[0]
    asked = await ask_json(
        choice.chat,
        prompt(body, facts.profile, facts.custom_keys, facts.current),
        lambda answer: read_emails(answer, count=count, first_step=first, custom_keys=facts.custom_keys),
    )
    return WritePrepared(
        drafts=asked.result or [],
        problems=[] if asked.result is not None else asked.problems,
        own_key=choice.own_key,
        profile=facts.profile,
        custom_keys=facts.custom_keys,
    )
