"""A campaign's leads: adding (set-based, with exact counts), removing, listing, and their send history."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Select,
    String,
    and_,
    case,
    exists,
    false,
    func,
    literal,
    or_,
    true,
)

from outreach_core.campaigns.lifecycle import reopened
from outreach_core.campaigns.schemas import (
    AddCampaignLeadsIn,
    CampaignLead,
    CampaignLeadPage,
    CampaignLeadsAdded,
    ListCampaignLeadsQuery,
    RemoveCampaignLeadsIn,
    Send,
    SendList,
)
from outreach_core.campaigns.store import campaign_row, lead_counts
from outreach_core.kernel.bulk import OuterLoopJoin, count_upto, insert_from_select, row_ids
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import (
    campaign_leads,
    campaigns,
    leads,
    list_leads,
    lists,
    sends,
    suppressions,
)
from outreach_core.kernel.db.types import UtcDateTime
from outreach_core.kernel.errors import NotFound
from outreach_core.targets.schemas import LeadFilter, Removed
from outreach_core.targets.selection import (
    SEARCH_TOTAL_LIMIT,
    common_short_term,
    holds_term,
    matching_ids,
    search_needle,
)

UNREACHABLE_LEAD_STATUSES = ("unsubscribed", "bounced", "suppressed")
RISKY = ("risky", "catch_all")


async def add_leads_to_campaign(
    ctx: WorkspaceContext, id: str, body: AddCampaignLeadsIn
) -> CampaignLeadsAdded:
    """Add leads to a campaign from lists (`listIds`), by id (`leadIds`) or every lead (`allLeads: true`).

    Counts: `matched` distinct leads selected; `alreadyIn` were in the campaign; `suppressed` are
    unsubscribed, bounced or on the suppression list (address or domain); `invalid` failed verification;
    `risky` are risky or catch-all and left out because the campaign has `skipRisky`; `added` is the rest.
    Each lead is counted once, in that order. Works in every status: a running campaign starts contacting
    new leads in its next window; a completed one becomes paused so you can launch it again."""
    row = await campaign_row(ctx, id)
    selected = await _selection(ctx, body)
    already = exists(
        scoped(ctx, campaign_leads)
        .select(campaign_leads.c.id)
        .where(campaign_leads.c.campaign_id == id, campaign_leads.c.lead_id == leads.c.id)
    )
    suppressed = or_(
        leads.c.status.in_(UNREACHABLE_LEAD_STATUSES),
        exists(
            scoped(ctx, suppressions)
            .select(suppressions.c.id)
            .where(suppressions.c.value.in_((leads.c.email, leads.c.domain)))
        ),
    )
    invalid = leads.c.verify_status == "invalid"
    risky = leads.c.verify_status.in_(RISKY) if row.skip_risky else false()
    bucket = case(
        (already, "already_in"),
        (suppressed, "suppressed"),
        (invalid, "invalid"),
        (risky, "risky"),
        else_="added",
    )
    counts = dict.fromkeys(("already_in", "suppressed", "invalid", "risky", "added"), 0)
    grouped = (
        await ctx.conn.execute(
            scoped(ctx, leads)
            .select(bucket.label("b"), func.count().label("n"))
            .where(selected)
            .group_by(bucket)
        )
    ).all()
    counts.update({r.b: int(r.n) for r in grouped})
    if counts["added"]:
        source = scoped(ctx, leads).select(
            row_ids("cl", leads.c.id),
            literal(id, String),
            leads.c.id,
            literal(ctx.now, UtcDateTime),
        )
        source = source.where(selected, ~already, ~suppressed, ~invalid, ~risky)
        inserted = await ctx.conn.execute(
            insert_from_select(
                ctx,
                campaign_leads,
                ("id", "campaign_id", "lead_id", "added_at"),
                source,
                skip_duplicates=True,
            )
        )
        # A lead another request added meanwhile was skipped by the insert: it counts as already in.
        raced = counts["added"] - int(inserted.rowcount)
        counts["added"] -= raced
        counts["already_in"] += raced
        values = {"updated_at": ctx.now, **reopened(row, "New leads were added.")}
        await ctx.conn.execute(scoped(ctx, campaigns).update().where(campaigns.c.id == id).values(**values))
    return CampaignLeadsAdded(matched=sum(counts.values()), **counts)


async def remove_leads_from_campaign(ctx: WorkspaceContext, id: str, body: RemoveCampaignLeadsIn) -> Removed:
    """Take leads out of a campaign by campaign lead id (`ids`, as listed by `list_campaign_leads`). They
    get no more email from it; the leads stay in the workspace and what was already sent stays in the
    history. Asks to confirm."""
    await campaign_row(ctx, id)
    result = await ctx.conn.execute(
        scoped(ctx, campaign_leads)
        .delete()
        .where(campaign_leads.c.campaign_id == id, campaign_leads.c.id.in_(body.ids))
    )
    return Removed(removed=int(result.rowcount))


async def count_campaign_leads(ctx: WorkspaceContext, id: str, ids: list[str]) -> int:
    """How many of `ids` are leads of the campaign (for the confirmation of a removal)."""
    return int(
        (
            await ctx.conn.execute(
                scoped(ctx, campaign_leads)
                .select(func.count())
                .where(campaign_leads.c.campaign_id == id, campaign_leads.c.id.in_(ids))
            )
        ).scalar_one()
    )


async def list_campaign_leads(
    ctx: WorkspaceContext, id: str, query: ListCampaignLeadsQuery
) -> CampaignLeadPage:
    """Page through a campaign's leads in the order they were added, with their progress: `status`
    (not_contacted, contacted, completed, replied, rescheduled, unsubscribed, bounced, skipped, stopped),
    `step` (emails sent so far), assigned mailbox and next send time. Filter by `status` (any of) and
    `search` (email, name or company). Each item's `id` is the campaign lead id used by
    `list_campaign_lead_sends` and `remove_leads_from_campaign`. A `search` is counted up to 10,000
    matches: past that `total` is 10,000 and `totalExact` false; keep paging while pages come back full."""
    await campaign_row(ctx, id)
    in_campaign: list[ColumnElement[bool]] = [campaign_leads.c.campaign_id == id]
    if query.status:
        in_campaign.append(campaign_leads.c.status.in_(query.status))
    counters = (await lead_counts(ctx, [id])).get(id, [])
    size = sum(n for status, _, n in counters if not query.status or status in query.status)
    offset = (query.page - 1) * query.page_size
    needle = search_needle(query.search or "")
    if needle:
        total, total_exact, keys = await _searched_page(ctx, query, in_campaign, size, needle)
    else:
        total, total_exact = size, True
        # the page's ids from the campaign's own index: no lead is read for the rows an offset skips
        page = scoped(ctx, campaign_leads).select(campaign_leads.c.id).where(*in_campaign)
        page = page.order_by(*_IN_ADDED_ORDER).limit(query.page_size).offset(offset)
        keys = list((await ctx.conn.execute(page)).scalars())
    rows = (
        await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .select(
                campaign_leads,
                leads.c.email,
                leads.c.first_name,
                leads.c.last_name,
                leads.c.company,
            )
            .join(leads, leads.c.id == campaign_leads.c.lead_id)
            .where(campaign_leads.c.id.in_(keys))
            .order_by(*_IN_ADDED_ORDER)
        )
    ).all()
    tracked = await _tracked(ctx, keys)
    return CampaignLeadPage(
        leads=[campaign_lead_out(r, **tracked.get(r.id, {})) for r in rows],
        total=total,
        total_exact=total_exact,
        page=query.page,
        page_size=query.page_size,
    )


_IN_ADDED_ORDER = (campaign_leads.c.added_at, campaign_leads.c.id)


async def _searched_page(
    ctx: WorkspaceContext,
    query: ListCampaignLeadsQuery,
    in_campaign: list[ColumnElement[bool]],
    size: int,
    needle: str,
) -> tuple[int, bool, list[str]]:
    """(total, totalExact, the page's campaign lead ids) of a search of a campaign's leads.

    Whichever side is smaller drives: a campaign of at most `SEARCH_TOTAL_LIMIT` leads (or a term so common
    a count stops soon) is walked in its order, testing each lead's text; otherwise the term's matches come
    from the search index and each is looked up in the campaign, stopping past the limit. Up to the limit
    those are the page's candidates, counted and sorted in one statement; past it the term is common in the
    campaign and the page walks the campaign's order, stopping at its last match. (Walking a million-lead
    campaign for a term one lead holds took 2 s, and counting it 1.2 s.)"""
    offset = (query.page - 1) * query.page_size
    walk = (
        scoped(ctx, campaign_leads)
        .select(campaign_leads.c.id)
        .join(leads, leads.c.id == campaign_leads.c.lead_id)
        .where(*in_campaign, holds_term(needle))
    )
    if size > SEARCH_TOTAL_LIMIT and not await common_short_term(ctx, needle):
        candidates = _in_campaign_of_each(ctx, matching_ids(ctx, LeadFilter(search=needle)), in_campaign)
        candidates = candidates.limit(SEARCH_TOTAL_LIMIT + 1)
        # the candidates are read once: counted and sorted together, only the page comes back
        found = candidates.subquery()
        page_of_found = (
            found.select()
            .with_only_columns(found.c.id, func.count().over().label("matched"))
            .order_by(found.c.added_at, found.c.id)
            .limit(query.page_size)
            .offset(offset)
        )
        rows = (await ctx.conn.execute(page_of_found)).all()
        if rows:
            matched = int(rows[0].matched)
        else:  # a page past the last match says nothing of how many there are
            matched = await count_upto(ctx, candidates, SEARCH_TOTAL_LIMIT + 1) if offset else 0
        if matched <= SEARCH_TOTAL_LIMIT:
            return matched, True, [r.id for r in rows]
    else:
        matched = await count_upto(ctx, walk, SEARCH_TOTAL_LIMIT + 1)
    page = walk.order_by(*_IN_ADDED_ORDER).limit(query.page_size).offset(offset)
    keys = list((await ctx.conn.execute(page)).scalars())
    return min(matched, SEARCH_TOTAL_LIMIT), matched <= SEARCH_TOTAL_LIMIT, keys


def _in_campaign_of_each(
    ctx: WorkspaceContext, lead_ids: Select[Any] | CompoundSelect[Any], in_campaign: list[ColumnElement[bool]]
) -> Select[Any]:
    """(id, added_at) of the campaign leads of `lead_ids`, looking each lead up in turn in an index of the
    campaign leads by lead, so that a LIMIT stops the reading of `lead_ids` early. PostgreSQL
    otherwise merges the leads and the campaign's million rows in lead id order (1.2 s for 10,001 of them);
    `LATERAL (... LIMIT 1)` cannot be merged. SQLite has no LATERAL; its CROSS JOIN keeps the order."""
    looked_up = (campaign_leads.c.id, campaign_leads.c.added_at)
    each = lead_ids.subquery()
    if ctx.conn.dialect.name == "sqlite":
        from_each = OuterLoopJoin(each, campaign_leads, campaign_leads.c.lead_id == each.c.id)
        return scoped(ctx, campaign_leads).select(*looked_up).select_from(from_each).where(*in_campaign)
    probe = (
        scoped(ctx, campaign_leads)
        .select(*looked_up)
        .where(*in_campaign, campaign_leads.c.lead_id == each.c.id)
        .limit(1)
        .lateral()
    )
    return each.select().with_only_columns(probe.c.id, probe.c.added_at).select_from(each.join(probe, true()))


async def list_campaign_lead_sends(ctx: WorkspaceContext, id: str, campaignLeadId: str) -> SendList:
    """Every email of the campaign that went (or is going) to one campaign lead, in step order: the
    rendered subject and body as sent, mailbox, step, variant, status (sending, sent, retry, failed,
    bounced, unknown — outcome lost in a crash, never repeated automatically) and any error. Empty until
    the sender has sent something."""
    await campaign_row(ctx, id)
    await campaign_lead_row(ctx, id, campaignLeadId)
    rows = (
        await ctx.conn.execute(
            scoped(ctx, sends)
            .select()
            .where(sends.c.campaign_lead_id == campaignLeadId)
            .order_by(sends.c.step, sends.c.created_at)
        )
    ).all()
    return SendList(sends=[send_out(r) for r in rows])


async def campaign_lead_row(
    ctx: WorkspaceContext, campaign_id: str, campaign_lead_id: str, *, for_update: bool = False
) -> Any:
    """A campaign lead of this campaign (404 for another campaign's or workspace's)."""
    stmt = (
        scoped(ctx, campaign_leads)
        .select()
        .where(campaign_leads.c.id == campaign_lead_id, campaign_leads.c.campaign_id == campaign_id)
    )
    if for_update:
        stmt = stmt.with_for_update()
    row = (await ctx.conn.execute(stmt)).one_or_none()
    if row is None:
        raise NotFound("campaign lead", campaign_lead_id)
    return row


def campaign_lead_out(r: Any, **tracked: Any) -> CampaignLead:
    """A campaign lead row joined to its lead's email, names and company, as the API shows it; `tracked`:
    its opens and clicks over its sends (`_tracked`), none when not given."""
    return CampaignLead.from_row(r, **tracked)


async def _tracked(ctx: WorkspaceContext, campaign_lead_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Opens and clicks of a page of campaign leads, summed over their sends (docs/tracking.md)."""
    if not campaign_lead_ids:
        return {}
    rows = await ctx.conn.execute(
        scoped(ctx, sends)
        .select(
            sends.c.campaign_lead_id,
            func.min(sends.c.opened_at).label("opened_at"),
            func.sum(sends.c.open_count).label("open_count"),
            func.min(sends.c.clicked_at).label("clicked_at"),
            func.sum(sends.c.click_count).label("click_count"),
            func.sum(sends.c.flagged_opens).label("flagged_opens"),
            func.sum(sends.c.flagged_clicks).label("flagged_clicks"),
        )
        .where(sends.c.campaign_lead_id.in_(campaign_lead_ids))
        .group_by(sends.c.campaign_lead_id)
    )
    return {
        r.campaign_lead_id: {
            "opened_at": r.opened_at,
            "open_count": int(r.open_count or 0),
            "clicked_at": r.clicked_at,
            "click_count": int(r.click_count or 0),
            "flagged_opens": int(r.flagged_opens or 0),
            "flagged_clicks": int(r.flagged_clicks or 0),
        }
        for r in rows
    }


def send_out(r: Any) -> Send:
    """A ledger row as the API shows it."""
    return Send.from_row(r, to=r.to_email, body=r.body_html, text=r.body_text)


async def _selection(ctx: WorkspaceContext, body: AddCampaignLeadsIn) -> ColumnElement[bool]:
    """The condition on `leads` for the leads a request names (lists must exist in the workspace)."""
    if body.all_leads:
        return and_(leads.c.id.isnot(None))
    parts: list[ColumnElement[bool]] = []
    if body.list_ids:
        wanted = list(dict.fromkeys(body.list_ids))
        found = set(
            (
                await ctx.conn.execute(scoped(ctx, lists).select(lists.c.id).where(lists.c.id.in_(wanted)))
            ).scalars()
        )
        for list_id in wanted:
            if list_id not in found:
                raise NotFound("list", list_id)
        parts.append(
            exists(
                scoped(ctx, list_leads)
                .select(list_leads.c.lead_id)
                .where(list_leads.c.list_id.in_(wanted), list_leads.c.lead_id == leads.c.id)
            )
        )
    if body.lead_ids:
        parts.append(leads.c.id.in_(body.lead_ids))
    return or_(*parts)
