"""Editing a campaign's sequence: steps, A/B variants, or the whole sequence at once.

Limits: 1 to 10 steps, 1 to 5 variants a step, at least one active variant a step. Bodies are sanitized
with nh3 on save (plain text or simple HTML in, sanitized HTML out); subjects cannot carry line breaks.
Changes that shift step positions (delete, move, replace) are refused while a campaign is running, because
leads in flight are at a position; appending steps and editing text work in every status.
"""

from __future__ import annotations

from typing import Any

from outreach_core.campaigns.operations import get_campaign
from outreach_core.campaigns.schemas import (
    MAX_STEPS,
    MAX_VARIANTS,
    AddStepIn,
    AddVariantIn,
    Campaign,
    MoveStepIn,
    SavedVariant,
    SequenceIn,
    Step,
    StepPatch,
    Variant,
    VariantPatch,
)
from outreach_core.campaigns.store import campaign_row, load_steps, touch, write_steps
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_steps, campaign_variants
from outreach_core.kernel.errors import Conflict, InvalidInput, InvalidState, NotFound
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.wire import Ok
from outreach_core.mail.sanitize import header_safe, sanitize_body

EDITABLE = ("draft", "paused")


async def add_step(ctx: WorkspaceContext, id: str, body: AddStepIn) -> Campaign:
    """Add a follow-up email at the end of the sequence (at most 10), with one empty variant. `waitDays` is
    the number of days after the previous email (default 3); `sameThread` sends it as a reply in the thread
    of the first email (default true)."""
    await campaign_row(ctx, id)
    steps = await load_steps(ctx, id)
    if len(steps) >= MAX_STEPS:
        raise Conflict(f"A campaign has at most {MAX_STEPS} steps.", {"steps": len(steps)})
    step_id = new_id("stp")
    await ctx.conn.execute(
        scoped(ctx, campaign_steps).insert(
            {
                "id": step_id,
                "campaign_id": id,
                "position": len(steps),
                "wait_days": body.wait_days,
                "same_thread": body.same_thread,
                "created_at": ctx.now,
            }
        )
    )
    await _insert_variant(ctx, id, step_id, 0, subject="", body="", weight=1)
    await touch(ctx, id)
    return await get_campaign(ctx, id)


async def update_step(ctx: WorkspaceContext, id: str, stepId: str, body: StepPatch) -> Ok:
    """Change a step's `waitDays` (days after the previous email, 0 to 365) or `sameThread`."""
    await campaign_row(ctx, id)
    await _step(ctx, id, stepId)
    changes = body.model_dump(exclude_unset=True, by_alias=False)
    if changes:
        await ctx.conn.execute(
            scoped(ctx, campaign_steps).update().where(campaign_steps.c.id == stepId).values(**changes)
        )
        await touch(ctx, id)
    return Ok()


async def delete_step(ctx: WorkspaceContext, id: str, stepId: str) -> Campaign:
    """Delete a step with its variants; later steps move up. A campaign keeps at least one step. Only while
    the campaign is a draft or paused."""
    await _editable(ctx, id, "delete a step")
    steps = await load_steps(ctx, id)
    await _step(ctx, id, stepId)
    if len(steps) == 1:
        raise Conflict("A campaign needs at least one step.")
    await ctx.conn.execute(scoped(ctx, campaign_steps).delete().where(campaign_steps.c.id == stepId))
    await _renumber_steps(ctx, [s.id for s in steps if s.id != stepId])
    await touch(ctx, id)
    return await get_campaign(ctx, id)


async def move_step(ctx: WorkspaceContext, id: str, stepId: str, body: MoveStepIn) -> Campaign:
    """Move a step to position `to` (0 = first email; a position past the last step moves it to the end).
    Only while the campaign is a draft or paused."""
    await _editable(ctx, id, "move a step")
    steps = await load_steps(ctx, id)
    await _step(ctx, id, stepId)
    order = [s.id for s in steps if s.id != stepId]
    order.insert(body.to, stepId)
    await _renumber_steps(ctx, order)
    await touch(ctx, id)
    return await get_campaign(ctx, id)


async def add_variant(ctx: WorkspaceContext, id: str, stepId: str, body: AddVariantIn) -> Campaign:
    """Add an A/B variant to a step (at most 5 a step). With `copyFrom` (a variant id of this campaign) it
    starts as a copy of that variant's subject, body and weight; otherwise empty."""
    await campaign_row(ctx, id)
    await _step(ctx, id, stepId)
    variants = await _variants_of(ctx, stepId)
    if len(variants) >= MAX_VARIANTS:
        raise Conflict(f"A step has at most {MAX_VARIANTS} variants.", {"variants": len(variants)})
    subject, text, weight = "", "", 1
    if body.copy_from is not None:
        source = await _variant(ctx, id, body.copy_from)
        subject, text, weight = source.subject, source.body, source.weight
    await _insert_variant(ctx, id, stepId, len(variants), subject=subject, body=text, weight=weight)
    await touch(ctx, id)
    return await get_campaign(ctx, id)


async def update_variant(ctx: WorkspaceContext, id: str, variantId: str, body: VariantPatch) -> SavedVariant:
    """Change a variant's `subject`, `body` (plain text — blank lines split paragraphs — or simple HTML;
    sanitized on save and returned as saved), `weight` (relative share among active variants, 1 to 100) or
    `active`. Variables like {{first_name|there}} and spintax like {Hi|Hello} are kept. A step keeps at least
    one active variant."""
    await campaign_row(ctx, id)
    variant = await _variant(ctx, id, variantId)
    changes = body.model_dump(exclude_unset=True, by_alias=False)
    if "subject" in changes:
        changes["subject"] = header_safe(changes["subject"])
    if "body" in changes:
        changes["body"] = sanitize_body(changes["body"])
    if changes.get("active") is False and variant.active:
        others = [v for v in await _variants_of(ctx, variant.step_id) if v.id != variantId and v.active]
        if not others:
            raise Conflict("A step needs at least one active variant.")
    if changes:
        await ctx.conn.execute(
            scoped(ctx, campaign_variants)
            .update()
            .where(campaign_variants.c.id == variantId)
            .values(**changes)
        )
        await touch(ctx, id)
    return SavedVariant(body=changes.get("body", variant.body))


async def delete_variant(ctx: WorkspaceContext, id: str, variantId: str) -> Campaign:
    """Delete an A/B variant. A step keeps at least one variant and one active variant; leads that were
    getting it get one of the remaining variants by weight."""
    await campaign_row(ctx, id)
    variant = await _variant(ctx, id, variantId)
    rest = [v for v in await _variants_of(ctx, variant.step_id) if v.id != variantId]
    if not rest:
        raise Conflict("A step needs at least one variant; delete the step instead.")
    if not any(v.active for v in rest):
        raise Conflict("A step needs at least one active variant.")
    await ctx.conn.execute(scoped(ctx, campaign_variants).delete().where(campaign_variants.c.id == variantId))
    for position, v in enumerate(rest):
        if v.position != position:
            await ctx.conn.execute(
                scoped(ctx, campaign_variants)
                .update()
                .where(campaign_variants.c.id == v.id)
                .values(position=position)
            )
    await touch(ctx, id)
    return await get_campaign(ctx, id)


async def set_sequence(ctx: WorkspaceContext, id: str, body: SequenceIn) -> Campaign:
    """Replace the whole sequence: `steps` in order (1 to 10), each with `waitDays`, `sameThread` and 1 to 5
    `variants` ({subject, body, weight, active}; at least one active). Only while the campaign is a draft or
    paused. Pass the `id` of an existing step or variant to keep it (and its statistics); others get new
    ids. Bodies are sanitized and returned as saved."""
    await _editable(ctx, id, "replace the sequence")
    current = await load_steps(ctx, id)
    step_ids = {s.id for s in current}
    variant_ids = {v.id for s in current for v in s.variants}
    seen: set[str] = set()
    steps = []
    for s_index, step in enumerate(body.steps):
        variants = []
        for v_index, v in enumerate(step.variants):
            variants.append(
                Variant(
                    id=_kept(v.id, variant_ids, seen, f"steps.{s_index}.variants.{v_index}.id", "var"),
                    label="",
                    subject=header_safe(v.subject),
                    body=sanitize_body(v.body),
                    weight=v.weight,
                    active=v.active,
                )
            )
        steps.append(
            Step(
                id=_kept(step.id, step_ids, seen, f"steps.{s_index}.id", "stp"),
                position=s_index,
                wait_days=step.wait_days,
                same_thread=step.same_thread,
                variants=variants,
            )
        )
    await ctx.conn.execute(scoped(ctx, campaign_steps).delete().where(campaign_steps.c.campaign_id == id))
    await write_steps(ctx, id, steps)
    await touch(ctx, id)
    return await get_campaign(ctx, id)


# --- helpers ---------------------------------------------------------------------------------------------


def _kept(given: str | None, existing: set[str], seen: set[str], path: str, prefix: str) -> str:
    if given is None:
        return new_id(prefix)
    if given not in existing:  # like any id the workspace does not have: 404, naming where it was given
        kind = "step" if prefix == "stp" else "variant"
        raise NotFound(f"{kind} of this campaign", given).at(path)
    if given in seen:
        raise InvalidInput.field(path, "this id is used twice")
    seen.add(given)
    return given


async def _editable(ctx: WorkspaceContext, id: str, action: str) -> None:
    row = await campaign_row(ctx, id)
    if row.status not in EDITABLE:
        raise InvalidState(
            f"Cannot {action} while the campaign is {row.status}; pause it first.",
            {"status": row.status},
        )


async def _step(ctx: WorkspaceContext, campaign_id: str, step_id: str) -> Any:
    row = (
        await ctx.conn.execute(
            scoped(ctx, campaign_steps)
            .select()
            .where(campaign_steps.c.id == step_id, campaign_steps.c.campaign_id == campaign_id)
        )
    ).one_or_none()
    if row is None:
        raise NotFound("step", step_id)
    return row


async def _variant(ctx: WorkspaceContext, campaign_id: str, variant_id: str) -> Any:
    row = (
        await ctx.conn.execute(
            scoped(ctx, campaign_variants)
            .select()
            .where(campaign_variants.c.id == variant_id, campaign_variants.c.campaign_id == campaign_id)
        )
    ).one_or_none()
    if row is None:
        raise NotFound("variant", variant_id)
    return row


async def _variants_of(ctx: WorkspaceContext, step_id: str) -> list[Any]:
    return list(
        (
            await ctx.conn.execute(
                scoped(ctx, campaign_variants)
                .select()
                .where(campaign_variants.c.step_id == step_id)
                .order_by(campaign_variants.c.position, campaign_variants.c.id)
            )
        ).all()
    )


async def _insert_variant(
    ctx: WorkspaceContext,
    campaign_id: str,
    step_id: str,
    position: int,
    *,
    subject: str,
    body: str,
    weight: int,
) -> None:
    await ctx.conn.execute(
        scoped(ctx, campaign_variants).insert(
            {
                "id": new_id("var"),
                "campaign_id": campaign_id,
                "step_id": step_id,
                "position": position,
                "subject": subject,
                "body": body,
                "weight": weight,
                "created_at": ctx.now,
            }
        )
    )


async def _renumber_steps(ctx: WorkspaceContext, ordered_ids: list[str]) -> None:
    for position, step_id in enumerate(ordered_ids):
        await ctx.conn.execute(
            scoped(ctx, campaign_steps)
            .update()
            .where(campaign_steps.c.id == step_id)
            .values(position=position)
        )
