"""What recording a batch reads once instead of once per message: the workspace's labels, the matched leads'
fixed facts (address, names, domain, zone), their campaigns' settings and the answered emails' step and
variant. Then an event's `data` costs one read (the lead as the change left it) instead of four.

Only facts a batch does not change are kept here; statuses are always read where they are changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import campaign_variants, campaigns, labels, leads, sends
from outreach_core.event_data import variant_label
from outreach_core.labels.schemas import LabelTriggers
from outreach_core.labels.store import LabelRow


@dataclass(frozen=True)
class Person:
    email: str
    first_name: str | None
    last_name: str | None
    domain: str
    timezone: str | None


@dataclass(frozen=True)
class CampaignFacts:
    name: str
    stop_on_reply: bool
    stop_for_company: bool
    timezone_fallback: str


@dataclass
class Known:
    labels: dict[str, tuple[LabelRow, str]] = field(default_factory=dict)  # id -> (row, type)
    people: dict[str, Person] = field(default_factory=dict)
    campaigns: dict[str, CampaignFacts] = field(default_factory=dict)
    steps: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=dict)  # send id ->


async def load_known(
    ctx: WorkspaceContext, lead_ids: Iterable[str], campaign_ids: Iterable[str], send_ids: Iterable[str]
) -> Known:
    known = Known()
    for r in await ctx.conn.execute(
        scoped(ctx, labels).select(labels.c.id, labels.c.name, labels.c.type, labels.c.triggers)
    ):
        known.labels[r.id] = (LabelRow(r.id, r.name, LabelTriggers.model_validate(r.triggers)), str(r.type))
    wanted = sorted(set(lead_ids))
    for start in range(0, len(wanted), 500):
        rows = await ctx.conn.execute(
            scoped(ctx, leads)
            .select(
                leads.c.id,
                leads.c.email,
                leads.c.first_name,
                leads.c.last_name,
                leads.c.domain,
                leads.c.timezone,
            )
            .where(leads.c.id.in_(wanted[start : start + 500]))
        )
        for r in rows:
            known.people[r.id] = Person(r.email, r.first_name, r.last_name, r.domain, r.timezone)
    cids = sorted(set(campaign_ids))
    if cids:
        rows = await ctx.conn.execute(
            scoped(ctx, campaigns)
            .select(
                campaigns.c.id,
                campaigns.c.name,
                campaigns.c.stop_on_reply,
                campaigns.c.stop_for_company,
                campaigns.c.timezone_fallback,
            )
            .where(campaigns.c.id.in_(cids))
        )
        for r in rows:
            known.campaigns[r.id] = CampaignFacts(
                r.name, r.stop_on_reply, r.stop_for_company, r.timezone_fallback
            )
    sids = sorted(set(send_ids))
    for start in range(0, len(sids), 500):
        rows = await ctx.conn.execute(
            scoped(ctx, sends)
            .select(
                sends.c.id, sends.c.step_id, sends.c.step, sends.c.variant_id, campaign_variants.c.position
            )
            .outerjoin(campaign_variants, campaign_variants.c.id == sends.c.variant_id)
            .where(sends.c.id.in_(sids[start : start + 500]))
        )
        for r in rows:
            variant = None
            if r.variant_id is not None:
                variant = {
                    "id": r.variant_id,
                    "label": variant_label(r.position) if r.position is not None else None,
                }
            known.steps[r.id] = ({"id": r.step_id, "position": r.step}, variant)
    return known


async def event_data(
    ctx: WorkspaceContext,
    known: Known,
    lead_id: str,
    *,
    campaign_id: str | None,
    send_id: str | None,
    thread: dict[str, Any],
    **extra: Any,
) -> dict[str, Any]:
    """The `data` `event_data.lead_event_data` builds, from what the batch already knows plus the lead as it
    is now (one read)."""
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
    step, variant = known.steps.get(send_id or "", (None, None))
    facts = known.campaigns.get(campaign_id or "")
    return {
        "lead": {
            "id": lead.id,
            "email": lead.email,
            "firstName": lead.first_name,
            "lastName": lead.last_name,
            "company": lead.company,
            "status": lead.status,
        },
        "campaign": None if facts is None or campaign_id is None else {"id": campaign_id, "name": facts.name},
        "thread": thread,
        "step": step,
        "variant": variant,
        **extra,
    }
