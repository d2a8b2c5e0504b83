"""Campaigns: list, read, create, change, duplicate, delete.

Lead counts come from `campaign_lead_counters`, kept exact by database triggers, so reading a campaign
with a million leads costs a handful of small queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func

from outreach_core.campaigns.schemas import (
    CAMPAIGN_LEAD_STATUSES,
    Campaign,
    CampaignList,
    CampaignListItem,
    CampaignWorkspace,
    CreateCampaignIn,
    CreatedId,
    ListCampaignsQuery,
    Step,
    UpdateCampaignIn,
)
from outreach_core.campaigns.store import campaign_row, lead_counts, load_steps, write_steps
from outreach_core.kernel.bulk import insert_rows
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import (
    campaign_mailboxes,
    campaign_steps,
    campaign_variants,
    campaigns,
    mailboxes,
    workspaces,
)
from outreach_core.kernel.errors import InvalidInput, NotFound
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.wire import Ok

# Settings copied by duplicate_campaign (everything but identity, status and history).
SETTINGS = (
    "timezone_fallback",
    "window_start",
    "window_end",
    "days",
    "daily_cap",
    "bounce_threshold",
    "esp_matching",
    "stop_on_reply",
    "track_clicks",
    "track_opens",
    "start_on",
    "end_on",
    "stop_for_company",
    "skip_risky",
)


async def list_campaigns(ctx: WorkspaceContext, query: ListCampaignsQuery) -> CampaignList:
    """List the workspace's campaigns, newest first, each with its lead counts by progress
    (`not_contacted`, `contacted`, `completed`, `replied`, ... and `total`), number of steps and mailboxes.
    Filter with `status` (any of draft, running, paused, completed)."""
    table = scoped(ctx, campaigns)
    stmt = table.select().order_by(campaigns.c.created_at.desc(), campaigns.c.id.desc())
    if query.status:
        stmt = stmt.where(campaigns.c.status.in_(query.status))
    rows = (await ctx.conn.execute(stmt)).all()
    ids = [r.id for r in rows]
    counts = await lead_counts(ctx, ids)
    steps = await _count_by_campaign(ctx, campaign_steps, ids)
    boxes = await _count_by_campaign(ctx, campaign_mailboxes, ids)
    return CampaignList(
        campaigns=[
            CampaignListItem.from_row(
                r,
                steps=steps.get(r.id, 0),
                mailboxes=boxes.get(r.id, 0),
                lead_counts=_status_counts(counts.get(r.id, [])),
            )
            for r in rows
        ]
    )


async def get_campaign(ctx: WorkspaceContext, id: str) -> Campaign:
    """One campaign with everything: schedule and options, the sequence (steps with their A/B variants),
    attached mailbox ids, lead counts by progress, `reached` (how many leads were sent each step) and how many
    attached mailboxes are active."""
    row = await campaign_row(ctx, id)
    steps = await load_steps(ctx, id)
    box_rows = (
        await ctx.conn.execute(
            scoped(ctx, campaign_mailboxes)
            .select(mailboxes.c.id, mailboxes.c.status)
            .join(mailboxes, mailboxes.c.id == campaign_mailboxes.c.mailbox_id)
            .where(campaign_mailboxes.c.campaign_id == id)
            .order_by(mailboxes.c.email)
        )
    ).all()
    counters = (await lead_counts(ctx, [id])).get(id, [])
    ws = (
        await ctx.conn.execute(
            scoped(ctx, workspaces).select(
                workspaces.c.id, workspaces.c.name, workspaces.c.timezone, workspaces.c.unsubscribe_mode
            )
        )
    ).one()
    return Campaign.from_row(
        row,
        steps=steps,
        mailbox_ids=[b.id for b in box_rows],
        lead_counts=_status_counts(counters),
        reached=[sum(n for _, step, n in counters if step > position) for position in range(len(steps))],
        active_mailboxes=sum(1 for b in box_rows if b.status == "active"),
        workspace=CampaignWorkspace.from_row(ws),
    )


async def create_campaign(ctx: WorkspaceContext, body: CreateCampaignIn) -> CreatedId:
    """Create a draft campaign. It starts with one empty email (one step, variant A), the workspace's time
    zone as `timezoneFallback`, a 09:00-17:00 window on weekdays and no mailboxes or leads. Next: attach
    mailboxes and set the schedule (`update_campaign`), write the emails (`set_sequence` or the step and
    variant tools), add leads (`add_leads_to_campaign`), check `get_launch_checklist`, then launch."""
    tz = (await ctx.conn.execute(scoped(ctx, workspaces).select(workspaces.c.timezone))).scalar_one()
    campaign_id = new_id("cmp")
    await ctx.conn.execute(
        scoped(ctx, campaigns).insert(
            {
                "id": campaign_id,
                "name": body.name.strip(),
                "timezone_fallback": tz,
                "created_at": ctx.now,
                "updated_at": ctx.now,
            }
        )
    )
    step_id = new_id("stp")
    await ctx.conn.execute(
        scoped(ctx, campaign_steps).insert(
            {"id": step_id, "campaign_id": campaign_id, "position": 0, "wait_days": 0, "created_at": ctx.now}
        )
    )
    await ctx.conn.execute(
        scoped(ctx, campaign_variants).insert(
            {
                "id": new_id("var"),
                "campaign_id": campaign_id,
                "step_id": step_id,
                "position": 0,
                "created_at": ctx.now,
            }
        )
    )
    return CreatedId(id=campaign_id)


async def update_campaign(ctx: WorkspaceContext, id: str, body: UpdateCampaignIn) -> Campaign:
    """Change a campaign's name, mailboxes (`mailboxIds` replaces the attached set; ids of this workspace
    only), schedule (`timezoneFallback`, `windowStart`/`windowEnd` in minutes after midnight with start
    before end, `days` bitmask: 1 = Monday ... 64 = Sunday, e.g. 31 = weekdays), `startOn`/`endOn` dates,
    `dailyCap` (first emails a day; null = mailbox limits only), `bounceThreshold` (percent; null = workspace
    default) and options. Only the given fields change; works in every status."""
    row = await campaign_row(ctx, id)
    changes = body.model_dump(exclude_unset=True, exclude={"mailbox_ids"}, by_alias=False)
    if "name" in changes:
        changes["name"] = changes["name"].strip()
    merged = {
        k: changes.get(k, getattr(row, k)) for k in ("window_start", "window_end", "start_on", "end_on")
    }
    if merged["window_start"] >= merged["window_end"]:
        raise InvalidInput.field("windowEnd", "the sending window must end after it starts (windowStart)")
    if merged["start_on"] and merged["end_on"] and merged["start_on"] > merged["end_on"]:
        raise InvalidInput.field("endOn", "endOn must not be before startOn")
    if body.mailbox_ids is not None:
        await _replace_mailboxes(ctx, id, list(dict.fromkeys(body.mailbox_ids)))
    await ctx.conn.execute(
        scoped(ctx, campaigns).update().where(campaigns.c.id == id).values(**changes, updated_at=ctx.now)
    )
    return await get_campaign(ctx, id)


async def duplicate_campaign(ctx: WorkspaceContext, id: str) -> CreatedId:
    """Copy a campaign into a new draft named “<name> (copy)”: sequence, schedule, options and mailboxes.
    No leads and no history are copied."""
    row = await campaign_row(ctx, id)
    copy_id = new_id("cmp")
    await ctx.conn.execute(
        scoped(ctx, campaigns).insert(
            {
                "id": copy_id,
                "name": f"{row.name} (copy)"[:200],
                **{k: getattr(row, k) for k in SETTINGS},
                "created_at": ctx.now,
                "updated_at": ctx.now,
            }
        )
    )
    await write_steps(ctx, copy_id, [_step_copy(s) for s in await load_steps(ctx, id)])
    boxes = (
        await ctx.conn.execute(
            scoped(ctx, campaign_mailboxes)
            .select(campaign_mailboxes.c.mailbox_id)
            .where(campaign_mailboxes.c.campaign_id == id)
        )
    ).scalars()
    await insert_rows(ctx, campaign_mailboxes, [{"campaign_id": copy_id, "mailbox_id": m} for m in boxes])
    return CreatedId(id=copy_id)


async def delete_campaign(ctx: WorkspaceContext, id: str) -> Ok:
    """Delete a campaign with its sequence, campaign leads and send history. The leads themselves stay in
    the workspace. Asks to confirm."""
    await campaign_row(ctx, id)
    await ctx.conn.execute(scoped(ctx, campaigns).delete().where(campaigns.c.id == id))
    return Ok()


def _status_counts(counters: Sequence[tuple[str, int, int]]) -> dict[str, int]:
    counts = dict.fromkeys(CAMPAIGN_LEAD_STATUSES, 0)
    for status, _, n in counters:
        counts[status] = counts.get(status, 0) + n
    counts["total"] = sum(n for _, _, n in counters)
    return counts


async def _count_by_campaign(ctx: WorkspaceContext, table: Any, ids: Sequence[str]) -> dict[str, int]:
    if not ids:
        return {}
    rows = (
        await ctx.conn.execute(
            scoped(ctx, table)
            .select(table.c.campaign_id, func.count().label("n"))
            .where(table.c.campaign_id.in_(ids))
            .group_by(table.c.campaign_id)
        )
    ).all()
    return {r.campaign_id: int(r.n) for r in rows}


async def _replace_mailboxes(ctx: WorkspaceContext, campaign_id: str, mailbox_ids: list[str]) -> None:
    if mailbox_ids:
        found = set(
            (
                await ctx.conn.execute(
                    scoped(ctx, mailboxes).select(mailboxes.c.id).where(mailboxes.c.id.in_(mailbox_ids))
                )
            ).scalars()
        )
        missing = [m for m in mailbox_ids if m not in found]
        if missing:
            error = NotFound("mailbox", missing[0])
            error.details = {"mailboxIds": missing}
            raise error
    await ctx.conn.execute(
        scoped(ctx, campaign_mailboxes).delete().where(campaign_mailboxes.c.campaign_id == campaign_id)
    )
    await insert_rows(
        ctx, campaign_mailboxes, [{"campaign_id": campaign_id, "mailbox_id": m} for m in mailbox_ids]
    )


def _step_copy(step: Step) -> Step:
    return step.model_copy(
        update={
            "id": new_id("stp"),
            "variants": [v.model_copy(update={"id": new_id("var")}) for v in step.variants],
        }
    )
