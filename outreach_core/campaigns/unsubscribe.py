"""One-click unsubscribe: the lead behind a signed link stops getting email, for good.

The link (see `mail/links.py`) names workspace, lead and campaign. Unsubscribing marks the lead
`unsubscribed`, puts its address on the suppression list, stops every campaign lead of it that could still
get email (status `unsubscribed`), and records a `lead.unsubscribed` event, all in one transaction. Doing it
again changes nothing and records nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from outreach_core.events.data import lead_event_data
from outreach_core.events.outbox import record_event
from outreach_core.kernel.context import Principal, WorkspaceContext, scoped, workspace_itself
from outreach_core.kernel.db.tables import campaign_leads, leads, suppressions, workspaces
from outreach_core.kernel.errors import NotFound
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.signing import InvalidSignature
from outreach_core.mail.links import read_unsubscribe_token

STOPPABLE = ("not_contacted", "contacted", "rescheduled")


@dataclass(frozen=True)
class UnsubscribeLink:
    principal: Principal  # the workspace acting for the person who clicked
    lead_id: str
    campaign_id: str | None


@dataclass(frozen=True)
class Unsubscribed:
    email: str
    workspace_name: str
    already: bool  # the lead had unsubscribed before


def read_unsubscribe_link(settings: Settings, token: str, now: dt.datetime) -> UnsubscribeLink:
    """The lead an unsubscribe token names; NotFound for anything forged, altered or malformed."""
    try:
        payload = read_unsubscribe_token(settings, token, now)
    except InvalidSignature as exc:
        raise NotFound("unsubscribe link") from exc
    campaign = payload.get("c")
    principal = workspace_itself(str(payload["w"]), "unsubscribe")
    return UnsubscribeLink(principal, str(payload["l"]), str(campaign) if campaign else None)


async def describe_unsubscribe(ctx: WorkspaceContext, lead_id: str) -> Unsubscribed:
    """What the unsubscribe page shows before the person confirms."""
    return await _state(ctx, lead_id)


async def unsubscribe_lead(
    ctx: WorkspaceContext,
    lead_id: str,
    campaign_id: str | None,
    *,
    source: str = "link",
    send_id: str | None = None,
    thread_id: str | None = None,
) -> Unsubscribed:
    """Unsubscribe the lead (idempotent): status, suppression list, campaign leads, `lead.unsubscribed`.
    `source` says how the lead asked (`link`; the inbox: `reply`, `complaint`), `send_id` and `thread_id`
    the email and thread concerned, for the event's `data`."""
    state = await _state(ctx, lead_id)
    if state.already:
        return state
    await ctx.conn.execute(
        scoped(ctx, leads)
        .update()
        .where(leads.c.id == lead_id)
        .values(status="unsubscribed", updated_at=ctx.now)
    )
    listed = (
        await ctx.conn.execute(
            scoped(ctx, suppressions).select(suppressions.c.id).where(suppressions.c.value == state.email)
        )
    ).first()
    if listed is None:
        await ctx.conn.execute(
            scoped(ctx, suppressions).insert(
                {
                    "id": new_id("sup"),
                    "kind": "email",
                    "value": state.email,
                    "reason": "unsubscribed",
                    "created_at": ctx.now,
                }
            )
        )
    await ctx.conn.execute(
        scoped(ctx, campaign_leads)
        .update()
        .where(campaign_leads.c.lead_id == lead_id, campaign_leads.c.status.in_(STOPPABLE))
        .values(status="unsubscribed", reason="unsubscribed", finished_at=ctx.now, next_at=None)
    )
    data = await lead_event_data(
        ctx, lead_id, campaign_id=campaign_id, send_id=send_id, thread_id=thread_id, source=source
    )
    await record_event(ctx, "lead.unsubscribed", data)
    return Unsubscribed(email=state.email, workspace_name=state.workspace_name, already=False)


async def _state(ctx: WorkspaceContext, lead_id: str) -> Unsubscribed:
    row = (
        await ctx.conn.execute(
            scoped(ctx, leads).select(leads.c.email, leads.c.status).where(leads.c.id == lead_id)
        )
    ).one_or_none()
    if row is None:
        raise NotFound("lead", lead_id)
    name = (await ctx.conn.execute(scoped(ctx, workspaces).select(workspaces.c.name))).scalar_one()
    return Unsubscribed(email=row.email, workspace_name=name, already=row.status == "unsubscribed")
