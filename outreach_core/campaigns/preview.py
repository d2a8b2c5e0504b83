"""The campaign preview: every email of the sequence exactly as one lead will get it."""

from __future__ import annotations

from typing import Any

from outreach_core.campaigns.compose import RENDERED_FIELDS, compose
from outreach_core.campaigns.rules import assign_mailbox
from outreach_core.campaigns.schemas import Preview, PreviewEmail, PreviewLead, PreviewQuery, PreviewSender
from outreach_core.campaigns.store import campaign_row, lead_counts, load_steps
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_leads, campaign_mailboxes, leads, mailboxes, workspaces
from outreach_core.kernel.errors import NotFound
from outreach_core.mail.links import unsubscribe_url
from outreach_core.mail.rendering import REPLY_TEXT_LINE, Sender, Unsubscribe
from outreach_core.tracking.base import tracking_base_url
from outreach_core.tracking.rewrite import Tracking, track_email

PICKER_SIZE = 20


async def preview_campaign(ctx: WorkspaceContext, id: str, query: PreviewQuery) -> Preview:
    """Every email of the sequence as one lead will get it: the variant chosen for them, spintax resolved
    as it will be for them, variables filled in, the unsubscribe link or line, the sender's name and
    signature, and the plain-text alternative. With `trackClicks` the links are the tracked redirects and
    with `trackOpens` the pixel is there, as in the email sent (a preview's links name no send: following
    them records nothing). `leadId` picks the lead (default: the first lead added to
    the campaign); `picker` lists campaign leads to preview. Unknown variables are listed per email."""
    campaign = await campaign_row(ctx, id)
    steps = await load_steps(ctx, id)
    lead, mailbox_id = await _lead_for(ctx, id, query.lead_id)
    sender = await _sender(ctx, id, lead.id if lead else None, mailbox_id)
    mode = (
        await ctx.conn.execute(scoped(ctx, workspaces).select(workspaces.c.unsubscribe_mode))
    ).scalar_one()
    lead_id = lead.id if lead else "preview"
    base_url = await tracking_base_url(ctx, ctx.workspace_id)
    url = unsubscribe_url(
        ctx.settings,
        workspace_id=ctx.workspace_id,
        lead_id=lead_id,
        campaign_id=campaign.id,
        base_url=base_url,
    )
    unsubscribe = Unsubscribe(mode=mode, url=url if mode == "link" else None)
    # links and pixel as the sender writes them, with no send named: they work but record nothing
    tracking = Tracking(
        clicks=campaign.track_clicks,
        opens=campaign.track_opens,
        secret=ctx.settings.resolved_secret_key(),
        base_url=base_url,
        send_id=None,
        unsubscribe_url=url if mode == "link" else None,
    )
    values = {f: getattr(lead, f) for f in RENDERED_FIELDS} if lead else {}
    emails = []
    for position in range(len(steps)):
        composed = compose(
            steps,
            position,
            lead_id=lead_id,
            lead=values,
            sender=Sender(name=sender.display_name, email=sender.email, signature=sender.signature)
            if sender
            else None,
            unsubscribe=unsubscribe,
        )
        if composed is None:
            continue
        body, text = track_email(composed.rendered.html, composed.rendered.text, tracking)
        emails.append(
            PreviewEmail(
                step_id=composed.step.id,
                position=position,
                variant_id=composed.variant.id,
                variant_label=composed.variant.label,
                wait_days=composed.step.wait_days,
                same_thread=composed.step.same_thread,
                subject=composed.subject,
                body=body,
                text=text,
                unknown_variables=list(composed.rendered.unknown),
            )
        )
    picker_rows = (
        await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .select(leads.c.id, leads.c.email, leads.c.first_name, leads.c.last_name, leads.c.company)
            .join(leads, leads.c.id == campaign_leads.c.lead_id)
            .where(campaign_leads.c.campaign_id == id)
            .order_by(campaign_leads.c.added_at, campaign_leads.c.id)
            .limit(PICKER_SIZE)
        )
    ).all()
    counters = (await lead_counts(ctx, [id])).get(id, [])
    return Preview(
        lead=_preview_lead(lead) if lead else None,
        sender=PreviewSender(mailbox_id=sender.id, email=sender.email, name=sender.display_name)
        if sender
        else None,
        unsubscribe=url if mode == "link" else REPLY_TEXT_LINE,
        emails=emails,
        picker=[_preview_lead(r) for r in picker_rows],
        picker_total=sum(n for _, _, n in counters),
    )


def _preview_lead(row: Any) -> PreviewLead:
    return PreviewLead.from_row(row)


async def _lead_for(ctx: WorkspaceContext, campaign_id: str, lead_id: str | None) -> tuple[Any, str | None]:
    """The lead to preview (a workspace lead, or the campaign's first) and its assigned mailbox, if any."""
    columns = (leads.c.id, *(leads.c[f] for f in RENDERED_FIELDS))
    if lead_id is not None:
        lead = (
            await ctx.conn.execute(scoped(ctx, leads).select(*columns).where(leads.c.id == lead_id))
        ).one_or_none()
        if lead is None:
            raise NotFound("lead", lead_id)
        assigned = (
            await ctx.conn.execute(
                scoped(ctx, campaign_leads)
                .select(campaign_leads.c.mailbox_id)
                .where(campaign_leads.c.campaign_id == campaign_id, campaign_leads.c.lead_id == lead_id)
            )
        ).scalar_one_or_none()
        return lead, assigned
    first = (
        await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .select(*columns, campaign_leads.c.mailbox_id)
            .join(leads, leads.c.id == campaign_leads.c.lead_id)
            .where(campaign_leads.c.campaign_id == campaign_id)
            .order_by(campaign_leads.c.added_at, campaign_leads.c.id)
            .limit(1)
        )
    ).one_or_none()
    return (first, first.mailbox_id) if first else (None, None)


async def _sender(ctx: WorkspaceContext, campaign_id: str, lead_id: str | None, assigned: str | None) -> Any:
    """The mailbox that sends to the lead: the one assigned, else the one the sender will assign."""
    rows = (
        await ctx.conn.execute(
            scoped(ctx, campaign_mailboxes)
            .select(
                mailboxes.c.id,
                mailboxes.c.email,
                mailboxes.c.display_name,
                mailboxes.c.signature,
                mailboxes.c.status,
            )
            .join(mailboxes, mailboxes.c.id == campaign_mailboxes.c.mailbox_id)
            .where(campaign_mailboxes.c.campaign_id == campaign_id)
        )
    ).all()
    by_id = {r.id: r for r in rows}
    if assigned in by_id:
        return by_id[assigned]
    active = [r.id for r in rows if r.status == "active"] or [r.id for r in rows]
    chosen = assign_mailbox(lead_id or "preview", active)
    return by_id[chosen] if chosen else None
