"""The campaign lifecycle: launch checklist, launch, pause, and the rules that end a run.

draft/paused --launch (checklist passes, active plan)--> running --pause--> paused
running --endOn passed / bounce threshold reached--> paused (pausedReason, `campaign.paused` event)
running --every campaign lead finished--> completed; adding leads to a completed campaign makes it paused.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, String, exists, func, true

from outreach_core.billing.plan import require_active_plan
from outreach_core.billing.rules import in_force
from outreach_core.campaigns.next_send import describe_next_send, next_send
from outreach_core.campaigns.rules import (
    ChecklistFacts,
    VariantFacts,
    can_launch,
    checklist,
    local_today,
    past_end,
    schedule_problems,
)
from outreach_core.campaigns.schemas import Checklist, ChecklistItem, Forecast, Launched, StatusOut
from outreach_core.campaigns.store import campaign_row, lead_counts, load_steps
from outreach_core.deliverability.store import weak_campaign_domains
from outreach_core.events.data import PauseCause, campaign_ref
from outreach_core.events.outbox import record_event
from outreach_core.kernel.context import (
    Principal,
    SystemContext,
    WorkspaceContext,
    scoped,
    system_scope,
    workspace_itself,
)
from outreach_core.kernel.db.tables import (
    campaign_leads,
    campaign_mailboxes,
    campaigns,
    leads,
    mailboxes,
    workspaces,
)
from outreach_core.kernel.errors import InvalidState, LaunchBlocked
from outreach_core.link_domain.store import active_link_host
from outreach_core.mail.content import spam_words, word_count
from outreach_core.mail.plaintext import html_to_text
from outreach_core.mail.rendering import template_problems, unknown_variables, variables_in
from outreach_core.warmup.problems import warmup_problems

WAITING = ("not_contacted", "contacted", "rescheduled")
"""Campaign-lead statuses that can still get email."""
RISKY = ("risky", "catch_all")
LAUNCHABLE = ("draft", "paused")


def reopened(campaign: Any, reason: str) -> dict[str, Any]:
    """The values that make a completed campaign paused again, ready to launch, once a lead waits again
    (leads added, an email to send again); nothing for a campaign in any other status."""
    if campaign.status != "completed":
        return {}
    return {"status": "paused", "completed_at": None, "paused_reason": reason}


async def get_launch_checklist(ctx: WorkspaceContext, id: str) -> Checklist:
    """What a launch needs: required items (attached active mailbox, complete emails, {{unsubscribe}} in the
    first email, no unknown variables, leads to contact, a schedule that can send, an active plan, a link
    domain where this server requires one) and warnings (risky leads, tracking without a link domain,
    spam-trigger words, very long emails). `canLaunch` is false while a required item fails; each item
    says what to fix and `details` lists the emails or words concerned."""
    items = await _checklist_items(ctx, id)
    return Checklist(items=items, can_launch=can_launch(items))


async def launch_campaign(ctx: WorkspaceContext, id: str, prepared: Forecast) -> Launched:
    """Start (or resume) sending a draft or paused campaign. Needs an active plan. Refused with
    `launch_blocked` (the failing checklist items in details) while a required checklist item fails; the
    status is then unchanged. Sending happens in the schedule window, in each lead's time zone: the answer's
    `nextSendAt` and `message` say when the first email can go out (now, or when the window next opens).
    The answer's `forecast` says what the sender will send day by day (as `forecast_campaign`). Asks to
    confirm."""
    await require_active_plan(ctx)
    row = await campaign_row(ctx, id, for_update=True)
    if row.status not in LAUNCHABLE:
        raise InvalidState(f"A {row.status} campaign cannot be launched.", {"status": row.status})
    items = await _checklist_items(ctx, id)
    if not can_launch(items):
        raise LaunchBlocked(
            "The launch checklist has failing required items.",
            {"items": [i.model_dump(by_alias=True) for i in items if i.required and not i.ok]},
        )
    await ctx.conn.execute(
        scoped(ctx, campaigns)
        .update()
        .where(campaigns.c.id == id)
        .values(
            status="running",
            paused_reason=None,
            started_at=row.started_at or ctx.now,
            updated_at=ctx.now,
        )
    )
    found = await next_send(ctx, row)
    ahead = prepared  # read before this transaction began (`prepare_launch_campaign`)
    return Launched(
        status="running",
        items=items,
        next_send_at=found.at if found else None,
        message=f"{describe_next_send(found, row)} {ahead.message}",
        forecast=ahead,
    )


async def pause_campaign(ctx: WorkspaceContext, id: str) -> StatusOut:
    """Stop sending a running campaign; nothing more goes out (emails already handed to the mail server
    still arrive). Launch again to resume where each lead stopped. Pausing a paused campaign changes
    nothing; a draft or completed campaign cannot be paused."""
    row = await campaign_row(ctx, id, for_update=True)
    if row.status == "paused":
        return StatusOut(status="paused")
    if row.status != "running":
        raise InvalidState(f"A {row.status} campaign cannot be paused.", {"status": row.status})
    await pause_for(ctx, id, None)
    return StatusOut(status="paused")


async def pause_for(ctx: WorkspaceContext, id: str, reason: str | None, cause: PauseCause = "person") -> None:
    """Pause a running campaign (by the person when `reason` is None, else by a rule: `cause` says which)
    and record the `campaign.paused` event in the same transaction."""
    await ctx.conn.execute(
        scoped(ctx, campaigns)
        .update()
        .where(campaigns.c.id == id)
        .values(status="paused", paused_reason=reason, updated_at=ctx.now)
    )
    campaign = await campaign_ref(ctx, id)
    data = {"campaign": campaign, "reason": reason or "Paused by a person.", "cause": cause}
    await record_event(ctx, "campaign.paused", data)


# --- the lifecycle worker ----------------------------------------------------------------------------------


def lifecycle_principal(workspace_id: str) -> Principal:
    """The workspace acting on its own behalf: what the campaign lifecycle rules run as."""
    return workspace_itself(workspace_id, "campaigns")


async def running_campaign_workspaces(ctx: SystemContext, limit: int) -> list[str]:
    """Workspaces with running campaigns (the only cross-workspace read of the lifecycle rules)."""
    c = system_scope(campaigns)
    rows = await ctx.conn.execute(
        c.select(campaigns.c.workspace_id).where(campaigns.c.status == "running").distinct().limit(limit)
    )
    return [str(ws) for ws in rows.scalars().all()]


async def settle_campaigns(ctx: WorkspaceContext) -> int:
    """Apply the rules that end a run to this workspace's running campaigns: pause those whose `endOn` has
    passed (in their fallback time zone), complete those whose every lead is finished. Returns how many
    campaigns changed."""
    rows = (
        await ctx.conn.execute(
            scoped(ctx, campaigns)
            .select(campaigns.c.id, campaigns.c.end_on, campaigns.c.timezone_fallback)
            .where(campaigns.c.status == "running")
        )
    ).all()
    changed = 0
    counts = await lead_counts(ctx, [r.id for r in rows])
    for r in rows:
        if past_end(r.end_on, ctx.now, r.timezone_fallback):
            await pause_for(ctx, r.id, f"The last sending day ({r.end_on}) has passed.", "end_on")
            changed += 1
            continue
        counters = counts.get(r.id, [])
        if counters and not any(status in WAITING for status, _, _ in counters):
            await ctx.conn.execute(
                scoped(ctx, campaigns)
                .update()
                .where(campaigns.c.id == r.id)
                .values(status="completed", completed_at=ctx.now, updated_at=ctx.now)
            )
            changed += 1
    return changed


# --- checklist facts ---------------------------------------------------------------------------------------


async def _checklist_items(ctx: WorkspaceContext, id: str) -> list[ChecklistItem]:
    row = await campaign_row(ctx, id)
    steps = await load_steps(ctx, id)
    attached = (
        (
            await ctx.conn.execute(
                scoped(ctx, campaign_mailboxes)
                .select(campaign_mailboxes.c.mailbox_id)
                .where(campaign_mailboxes.c.campaign_id == id)
            )
        )
        .scalars()
        .all()
    )
    boxes = (
        (
            await ctx.conn.execute(
                scoped(ctx, campaign_mailboxes)
                .select(mailboxes.c.status)
                .join(mailboxes, mailboxes.c.id == campaign_mailboxes.c.mailbox_id)
                .where(campaign_mailboxes.c.campaign_id == id)
            )
        )
        .scalars()
        .all()
    )
    counters = (await lead_counts(ctx, [id])).get(id, [])
    ws = (
        await ctx.conn.execute(
            scoped(ctx, workspaces).select(
                workspaces.c.plan,
                workspaces.c.plan_status,
                workspaces.c.cancel_at_period_end,
                workspaces.c.plan_renews_at,
                workspaces.c.unsubscribe_mode,
            )
        )
    ).one()
    candidates = sorted(
        {name for s in steps for v in s.variants for name in unknown_variables(v.subject + "\n" + v.body, [])}
    )
    custom_keys = await _custom_keys_present(ctx, id, candidates) if candidates else set()
    variants = []
    for position, s in enumerate(steps):
        for v in s.variants:
            text = html_to_text(v.body)
            template = v.subject + "\n" + v.body
            variants.append(
                VariantFacts(
                    step=position,
                    label=v.label,
                    subject=v.subject,
                    body=v.body,
                    active=v.active,
                    words=word_count(text),
                    spam_words=tuple(spam_words(v.subject + "\n" + text)),
                    problems=tuple(template_problems(v.subject) + template_problems(v.body)),
                    unknown=tuple(n for n in unknown_variables(template, []) if _norm(n) not in custom_keys),
                    has_unsubscribe="unsubscribe" in variables_in(v.body),
                )
            )
    facts = ChecklistFacts(
        campaign_id=id,
        mailboxes_attached=len(boxes),
        mailboxes_active=sum(1 for status in boxes if status == "active"),
        steps=len(steps),
        same_thread=tuple(s.same_thread for s in steps),
        variants=tuple(variants),
        leads_waiting=sum(n for status, _, n in counters if status in WAITING),
        risky_leads=0 if row.skip_risky else await _risky_waiting(ctx, id),
        schedule=tuple(
            schedule_problems(
                window_start=row.window_start,
                window_end=row.window_end,
                days=row.days,
                start_on=row.start_on,
                end_on=row.end_on,
                today=local_today(ctx.now, row.timezone_fallback),
            )
        ),
        plan_active=in_force(ws, ctx.now) is not None,
        # OUTREACH_LINK_DOMAIN_REQUIRED; links use the active link domain, else OUTREACH_PUBLIC_URL
        link_domain_required=ctx.settings.link_domain_required,
        link_domain_active=await active_link_host(ctx, ctx.workspace_id) is not None,
        tracking=row.track_opens or row.track_clicks,
        unsubscribe_mode=ws.unsubscribe_mode,
        warmup_problems=tuple(p.message for p in await warmup_problems(ctx, list(attached))),
        weak_domains=tuple(await weak_campaign_domains(ctx, id)),
    )
    return checklist(facts)


def _norm(name: str) -> str:
    return name.lower().replace("_", "")


async def _risky_waiting(ctx: WorkspaceContext, id: str) -> int:
    """Risky or catch-all leads still waiting for their first email: read from the (few) risky leads of the
    workspace, each checked against the campaign's unique (campaign, lead) index."""
    waiting = exists(
        scoped(ctx, campaign_leads)
        .select(campaign_leads.c.id)
        .where(
            campaign_leads.c.campaign_id == id,
            campaign_leads.c.lead_id == leads.c.id,
            campaign_leads.c.status == "not_contacted",
        )
    )
    count = scoped(ctx, leads).select(func.count()).where(leads.c.verify_status.in_(RISKY), waiting)
    return int((await ctx.conn.execute(count)).scalar_one())


async def _custom_keys_present(ctx: WorkspaceContext, id: str, names: list[str]) -> set[str]:
    """Of the variable `names`, the normalised ones that at least one lead of the campaign has as a custom
    field (keys compared case- and underscore-insensitively, as rendering does). One `EXISTS` per name, so
    a field that many leads have is found at the first of them."""
    wanted = sorted({_norm(n) for n in names})
    if ctx.conn.dialect.name == "postgresql":
        keys = func.jsonb_each(leads.c.custom).table_valued("key", "value").lateral("k")
    else:
        keys = func.json_each(leads.c.custom).table_valued("key").alias("k")
    key: ColumnElement[str] = func.lower(func.replace(keys.c.key.cast(String), "_", ""))
    having = [
        exists(
            scoped(ctx, campaign_leads)
            .select(campaign_leads.c.id)
            .join(leads, leads.c.id == campaign_leads.c.lead_id)
            .join(keys, true())
            .where(campaign_leads.c.campaign_id == id, key == name)
        ).label(f"k{i}")
        for i, name in enumerate(wanted)
    ]
    row = (await ctx.conn.execute(scoped(ctx, campaigns).select(*having).where(campaigns.c.id == id))).one()
    return {name for name, present in zip(wanted, row, strict=True) if present}
