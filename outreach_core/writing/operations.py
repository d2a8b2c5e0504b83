"""AI writing: `write_sequence` drafts emails from the offer profile and saves them as new variants
(docs/writing.md). The AI is asked in the endpoint's pre-transaction step (`writing/prepare.py`); this
transaction re-reads the sequence, places each draft, runs the content checklist and counts the draft."""

from __future__ import annotations

from typing import Any

from outreach_core.billing.ai_allowance import record_ai_draft
from outreach_core.billing.plan import require_active_plan
from outreach_core.campaigns.operations import get_campaign
from outreach_core.campaigns.rules import variant_label
from outreach_core.campaigns.schemas import MAX_STEPS, MAX_VARIANTS, Step
from outreach_core.campaigns.store import campaign_row, load_steps, touch
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_steps, campaign_variants
from outreach_core.kernel.ids import new_id
from outreach_core.mail.plaintext import html_to_text
from outreach_core.mail.sanitize import header_safe, sanitize_body
from outreach_core.offer.schemas import OfferProfile
from outreach_core.writing.checklist import Draft, content_problems
from outreach_core.writing.prepare import WritePrepared
from outreach_core.writing.schemas import WriteIn, WriteResult, WrittenEmail

EDITABLE = ("draft", "paused")


async def write_sequence(
    ctx: WorkspaceContext, id: str, body: WriteIn, prepared: WritePrepared
) -> WriteResult:
    """Draft campaign emails with AI from the workspace's offer profile, saved as new variants, never
    overwriting anything.

    Modes: `sequence` drafts `steps` emails (1 to 10): an empty campaign receives them as its steps;
    otherwise each becomes a new variant of the step at its position (or a new step at the end). `rewrite`,
    `shorter` and `angle` (with `angle`, and any mode with `persona`) draft a new variant of `variantId` in
    its step. Only facts of the offer profile and the lead's fields (as variables) are used. Every email runs
    the content checklist (length, spam words, links, {{unsubscribe}} in the first email, variables that
    exist, one call to action, no claims the profile does not make) and lists what it found in `problems`.
    Emails with nowhere to go (5 variants in the step, 10 steps) are listed in `skipped`; new variants of a
    running campaign are saved inactive, for a person to review. Needs an active plan and a saved offer
    profile (409 `offer_profile_required`); 409 `ai_unavailable` without an AI endpoint or AI key. One call
    counts as one AI draft of the plan's monthly allowance (not with the workspace's own AI key)."""
    await require_active_plan(ctx)
    row = await campaign_row(ctx, id, for_update=True)
    if not prepared.drafts:
        return WriteResult(
            campaign=await get_campaign(ctx, id), created=[], skipped=[], problems=prepared.problems
        )
    steps = await load_steps(ctx, id)
    editable = row.status in EDITABLE
    active = row.status != "running"
    created: list[WrittenEmail] = []
    skipped: list[str] = []
    if body.mode == "sequence" and editable and _empty(steps):
        await ctx.conn.execute(scoped(ctx, campaign_steps).delete().where(campaign_steps.c.campaign_id == id))
        steps = []
    for draft, wait_days in prepared.drafts:
        name = f"Email {draft.step + 1}"
        if draft.step < len(steps):
            step = steps[draft.step]
            if len(step.variants) >= MAX_VARIANTS:
                skipped.append(f"{name}: step {draft.step + 1} already has {MAX_VARIANTS} variants")
                continue
            position = len(step.variants)
            variant_id = await _insert_variant(ctx, id, step.id, position, draft, active)
            step.variants.append(step.variants[-1].model_copy(update={"id": variant_id}))
            created.append(_written(step.id, variant_id, draft, position, active, prepared.profile))
        elif len(steps) >= MAX_STEPS:
            skipped.append(f"{name}: the campaign already has {MAX_STEPS} steps")
        elif not editable:
            skipped.append(f"{name}: the campaign is {row.status}; new steps are added only while it is a "
                           "draft or paused")  # fmt: skip
        else:
            step_id = new_id("stp")
            await ctx.conn.execute(
                scoped(ctx, campaign_steps).insert(
                    {
                        "id": step_id,
                        "campaign_id": id,
                        "position": len(steps),
                        "wait_days": wait_days,
                        "same_thread": True,
                        "created_at": ctx.now,
                    }
                )
            )
            variant_id = await _insert_variant(ctx, id, step_id, 0, draft, active)
            steps.append(Step(id=step_id, position=len(steps), wait_days=wait_days, same_thread=True,
                              variants=[]))  # fmt: skip
            created.append(_written(step_id, variant_id, draft, 0, active, prepared.profile))
    if created:
        await record_ai_draft(ctx, "write_sequence", own_key=prepared.own_key)
        await touch(ctx, id)
    saved = {v.id: v for s in await load_steps(ctx, id) for v in s.variants}
    for email in created:
        email.body = saved[email.variant_id].body
        email.subject = saved[email.variant_id].subject
    return WriteResult(campaign=await get_campaign(ctx, id), created=created, skipped=skipped, problems=[])


def _empty(steps: list[Step]) -> bool:
    """A campaign whose emails are all blank (a new campaign starts with one empty email)."""
    return all(not v.subject.strip() and not html_to_text(v.body).strip() for s in steps for v in s.variants)


async def _insert_variant(
    ctx: WorkspaceContext, campaign_id: str, step_id: str, position: int, draft: Draft, active: bool
) -> str:
    variant_id = new_id("var")
    values: dict[str, Any] = {
        "id": variant_id,
        "campaign_id": campaign_id,
        "step_id": step_id,
        "position": position,
        "subject": header_safe(draft.subject),
        "body": sanitize_body(draft.body),
        "weight": 1,
        "active": active,
        "created_at": ctx.now,
    }
    await ctx.conn.execute(scoped(ctx, campaign_variants).insert(values))
    return variant_id


def _written(
    step_id: str, variant_id: str, draft: Draft, position: int, active: bool, profile: OfferProfile
) -> WrittenEmail:
    profile_text = "\n".join(str(getattr(profile, n)) for n in OfferProfile.model_fields)
    return WrittenEmail(
        step_id=step_id,
        variant_id=variant_id,
        step=draft.step,
        label=variant_label(position),
        subject=draft.subject,
        body=draft.body,
        active=active,
        problems=content_problems(draft, profile_text, profile.cta),
    )
