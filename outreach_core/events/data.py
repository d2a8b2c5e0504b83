"""The `data` of webhook events: one shape for every event about a lead, built where the event is recorded.

Every `lead.*` event carries `lead` and, always present and null where unknown, `campaign`, `thread`, `step`
and `variant`; each kind adds its own fields (docs/webhooks.md lists them with examples):

    {"lead": {"id", "email", "firstName", "lastName", "company", "status"},
     "campaign": {"id", "name"} | null,
     "thread": {"id", "subject"} | null,
     "step": {"id", "position"} | null,        # position 0 = the first email
     "variant": {"id", "label"} | null,        # label A, B, ... (null once the variant was deleted)
     ...kind-specific fields}

The values are read in the transaction of the change that causes the event, so the receiver sees the lead
as that change left it (a snapshot, not a reference that may have changed by the time it arrives).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_variants, campaigns, leads, sends, threads

PauseCause = Literal["person", "end_on", "bounce_rate"]
"""Why a campaign was paused: by a person (or an AI tool), its `endOn` date passed, its bounce rate
reached the threshold."""

LEAD_FIELDS = ("id", "email", "firstName", "lastName", "company", "status")


def iso_z(when: datetime) -> str:
    """The wire form of an instant: ISO 8601 in UTC with milliseconds and `Z`."""
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def variant_label(position: int) -> str:
    """A, B, C ... for variant positions 0, 1, 2 ..."""
    return chr(ord("A") + position)


class LeadFacts(Protocol):
    """What a `lead.*` event says of its lead (a `leads` row, or what a batch keeps of one)."""

    @property
    def email(self) -> str: ...
    @property
    def first_name(self) -> str | None: ...
    @property
    def last_name(self) -> str | None: ...
    @property
    def company(self) -> str | None: ...
    @property
    def status(self) -> str: ...


def lead_payload(
    lead_id: str,
    lead: LeadFacts,
    *,
    campaign: dict[str, Any] | None,
    thread: dict[str, Any] | None,
    step: dict[str, Any] | None,
    variant: dict[str, Any] | None,
    **extra: Any,
) -> dict[str, Any]:
    """The one shape of a `lead.*` event's `data` (see the module docstring); `extra` holds the kind's own
    fields (camelCase, JSON values)."""
    return {
        "lead": {
            "id": lead_id,
            "email": lead.email,
            "firstName": lead.first_name,
            "lastName": lead.last_name,
            "company": lead.company,
            "status": lead.status,
        },
        "campaign": campaign,
        "thread": thread,
        "step": step,
        "variant": variant,
        **extra,
    }


def step_refs(
    step_id: str, position: int, variant_id: str | None, variant_position: int | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """`step` and `variant` of an event about a campaign email (the variant's label is null once the
    variant was deleted)."""
    variant = None
    if variant_id is not None:
        label = variant_label(variant_position) if variant_position is not None else None
        variant = {"id": variant_id, "label": label}
    return {"id": step_id, "position": position}, variant


async def lead_event_data(
    ctx: WorkspaceContext,
    lead_id: str,
    *,
    campaign_id: str | None = None,
    send_id: str | None = None,
    thread_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """`data` for an event about one lead. `send_id` (the campaign email the event is about: the one that
    bounced, the one answered) fills in campaign, step and variant; `thread_id` the thread. `extra` holds
    the kind's own fields (camelCase, JSON values)."""
    lead = (
        await ctx.conn.execute(
            scoped(ctx, leads)
            .select(
                leads.c.id,
                leads.c.email,
                leads.c.first_name,
                leads.c.last_name,
                leads.c.company,
                leads.c.status,
            )
            .where(leads.c.id == lead_id)
        )
    ).one()
    step: dict[str, Any] | None = None
    variant: dict[str, Any] | None = None
    if send_id is not None:
        sent = (
            await ctx.conn.execute(
                scoped(ctx, sends)
                .select(
                    sends.c.campaign_id,
                    sends.c.step_id,
                    sends.c.step,
                    sends.c.variant_id,
                    campaign_variants.c.position,
                )
                .outerjoin(campaign_variants, campaign_variants.c.id == sends.c.variant_id)
                .where(sends.c.id == send_id)
            )
        ).one_or_none()
        if sent is not None:
            campaign_id = campaign_id or sent.campaign_id
            step, variant = step_refs(sent.step_id, sent.step, sent.variant_id, sent.position)
    thread: dict[str, Any] | None = None
    if thread_id is not None:
        found = (
            await ctx.conn.execute(
                scoped(ctx, threads)
                .select(threads.c.id, threads.c.subject, threads.c.campaign_id)
                .where(threads.c.id == thread_id)
            )
        ).one_or_none()
        if found is not None:
            thread = {"id": found.id, "subject": found.subject}
            campaign_id = campaign_id or found.campaign_id
    return lead_payload(
        lead.id,
        lead,
        campaign=await campaign_ref(ctx, campaign_id),
        thread=thread,
        step=step,
        variant=variant,
        **extra,
    )


async def campaign_ref(ctx: WorkspaceContext, campaign_id: str | None) -> dict[str, Any] | None:
    """`{"id", "name"}` of one of the workspace's campaigns; None when there is none (or it was deleted)."""
    if campaign_id is None:
        return None
    name = (
        await ctx.conn.execute(
            scoped(ctx, campaigns).select(campaigns.c.name).where(campaigns.c.id == campaign_id)
        )
    ).scalar_one_or_none()
    return None if name is None else {"id": campaign_id, "name": name}
