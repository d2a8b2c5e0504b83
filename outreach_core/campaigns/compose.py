"""What one lead gets at each step: the variant chosen for them and the rendered email.

Pure functions shared by the preview and the sender, so the preview is exactly what will be sent: the
variant is fixed per lead and step (weighted choice from a hash), spintax is seeded per lead, step and
variant, and a same-thread follow-up is a reply to the first email (`Re: <first subject>`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from outreach_core.campaigns.rules import WeightedVariant, pick_variant
from outreach_core.campaigns.schemas import Step, Variant
from outreach_core.leads.schemas import LEAD_FIELDS
from outreach_core.mail.message import reply_subject
from outreach_core.mail.rendering import (
    RenderedEmail,
    Sender,
    Unsubscribe,
    render_email,
    render_subject,
    spin_seed,
)

RENDERED_FIELDS: tuple[str, ...] = ("email", *LEAD_FIELDS, "custom")
"""The lead columns rendering reads (`lead` of `compose`), by their snake_case names: the address, the
lead's own fields (`leads.schemas.LEAD_FIELDS`) and its custom fields."""


@dataclass(frozen=True)
class ComposedEmail:
    step: Step
    variant: Variant
    rendered: RenderedEmail
    subject: str  # the subject as sent (a same-thread follow-up replies to the first email)


def chosen_variant(step: Step, lead_id: str) -> Variant | None:
    """The variant of `step` that lead `lead_id` gets (None when the step has no active variant)."""
    weighted = [WeightedVariant(v.id, v.weight, v.active) for v in step.variants]
    picked = pick_variant(weighted, f"{lead_id}:{step.id}")
    return next((v for v in step.variants if picked and v.id == picked.id), None)


def compose(
    steps: Sequence[Step],
    position: int,
    *,
    lead_id: str,
    lead: Mapping[str, Any],
    sender: Sender | None,
    unsubscribe: Unsubscribe,
) -> ComposedEmail | None:
    """The email at `position` of the sequence for one lead, or None when that step has nothing to send."""
    step = steps[position]
    variant = chosen_variant(step, lead_id)
    if variant is None:
        return None
    rendered = _render(step, variant, lead_id=lead_id, lead=lead, sender=sender, unsubscribe=unsubscribe)
    subject = rendered.subject
    if position > 0 and step.same_thread:
        first = _first_subject(steps[0], lead_id=lead_id, lead=lead, sender=sender, unsubscribe=unsubscribe)
        if first:
            subject = reply_subject(first)
    return ComposedEmail(step=step, variant=variant, rendered=rendered, subject=subject)


def _first_subject(
    first: Step, *, lead_id: str, lead: Mapping[str, Any], sender: Sender | None, unsubscribe: Unsubscribe
) -> str | None:
    """The subject the first email had (a same-thread follow-up answers it), rendered alone."""
    variant = chosen_variant(first, lead_id)
    if variant is None:
        return None
    return render_subject(
        variant.subject,
        lead=lead,
        sender=sender,
        unsubscribe=unsubscribe,
        seed=spin_seed(lead_id, first.id, variant.id),
    )


def _render(
    step: Step,
    variant: Variant,
    *,
    lead_id: str,
    lead: Mapping[str, Any],
    sender: Sender | None,
    unsubscribe: Unsubscribe,
) -> RenderedEmail:
    return render_email(
        subject=variant.subject,
        body=variant.body,
        lead=lead,
        sender=sender,
        unsubscribe=unsubscribe,
        seed=spin_seed(lead_id, step.id, variant.id),
    )
