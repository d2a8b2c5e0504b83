"""Analytics: the overview, campaign stats, campaign analytics and a campaign's breakdown with A/B winners,
read from the rollups (docs/analytics.md). Days are calendar days in the workspace time zone."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from sqlalchemy import literal, union_all

from outreach_core.analytics import store
from outreach_core.analytics.rules import Arm, Period, period, rate, winner
from outreach_core.analytics.schemas import (
    Breakdown,
    BreakdownQuery,
    CampaignAnalytics,
    CampaignAnalyticsQuery,
    CampaignRow,
    CampaignStats,
    CountryReplies,
    Counts,
    DayCounts,
    EspRow,
    MailboxHealth,
    MailboxProblem,
    MailboxRow,
    Overview,
    OverviewQuery,
    Sentiment,
    StatsQuery,
    StepRow,
    VariantRow,
    Winner,
)
from outreach_core.analytics.store import Sums
from outreach_core.campaigns.store import campaign_row
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_steps, campaign_variants, campaigns, mailboxes, workspaces
from outreach_core.kernel.db.tables.analytics import COUNTERS
from outreach_core.kernel.rollups import SENTIMENTS, zone_or_none
from outreach_core.warmup.problems import warmup_problems

SERIES = ("sent", "replied", "positive", "bounced", "opened")


async def get_analytics_overview(ctx: WorkspaceContext, query: OverviewQuery) -> Overview:
    """The workspace at a glance for the last `days` calendar days (7, 30 or 90; today included) in the
    workspace time zone: a day-by-day series and totals of emails sent, replies (a lead replying twice counts
    once; a reply counts against the email it answered), positive replies (thread labeled positive now),
    bounces, opens and won leads, with the same counts for the period just before (`previous`); mailbox
    health and problems; replies by sentiment, by weekday and hour in each lead's own time zone (`heatmap`,
    Monday first) and by country. `sending: false` when nothing was ever sent. Pass `chart: true` to also
    get a PNG chart to show the person."""
    zone_name, p, tracks_opens = await _period(ctx, query.days, opens=True)
    days = await store.days(ctx, "w", "", p.start, p.end, p.zone)
    totals = _total(days)
    read = await store.sums(
        ctx, [("previous", ("w",), p.previous_start, p.start), ("now", ("hm", "co"), p.start, p.end)]
    )
    previous = _sum(read["previous"].values())
    heat = [[0] * 24 for _ in range(7)]
    countries: list[CountryReplies] = []
    without = 0
    for (dim, k1, k2), sums in read["now"].items():
        if dim == "hm":
            if k1.isdigit() and k2.isdigit() and int(k1) < 7 and int(k2) < 24:
                heat[int(k1)][int(k2)] += sums["replied"]
        elif sums["replied"]:
            if k1:
                countries.append(CountryReplies(code=k1, replies=sums["replied"]))
            else:
                without += sums["replied"]
    countries.sort(key=lambda c: (-c.replies, c.code))
    return Overview(
        days=query.days,
        timezone=zone_name,
        series=_series(p, days),
        totals=_counts(totals),
        previous=_counts(previous),
        tracks_opens=tracks_opens,
        mailboxes=await _mailbox_health(ctx),
        sentiment=_sentiment(totals),
        heatmap=heat,
        countries=countries,
        replies_without_country=without,
        # a send counted in the period or the one before answers without another read
        sending=totals["sent"] > 0 or previous["sent"] > 0 or await store.ever_sent(ctx),
    )


async def get_campaign_stats(ctx: WorkspaceContext, query: StatsQuery) -> CampaignStats:
    """Emails sent, replies, positive replies, bounces and opens day by day for the last `days` calendar days
    (7, 30 or 90) in the workspace time zone, for all campaigns or one (`campaignId`), with the period's
    totals. Pass `chart: true` to also get a PNG line chart to show the person."""
    if query.campaign_id is not None:
        await campaign_row(ctx, query.campaign_id)  # 404 for a campaign that is not yours
    zone_name, p, tracks_opens = await _period(ctx, query.days, opens=True, campaign_id=query.campaign_id)
    dim, key = ("c", query.campaign_id) if query.campaign_id is not None else ("w", "")
    days = await store.days(ctx, dim, key, p.start, p.end, p.zone)
    return CampaignStats(
        days=query.days,
        timezone=zone_name,
        series=_series(p, days),
        totals=_counts(_total(days)),
        tracks_opens=tracks_opens,
    )


async def get_campaign_analytics(ctx: WorkspaceContext, query: CampaignAnalyticsQuery) -> CampaignAnalytics:
    """For the last `days` calendar days (7, 30 or 90): sent, replies, positive replies, bounces and opens
    with their rates by campaign, by sending mailbox and by the leads' email provider (ESP), and replies by
    sentiment (the type of the label their thread carries now). Replies count against the email they
    answered. Pass `chart: true` to also get a PNG chart of the workspace's days."""
    _, p, _ = await _period(ctx, query.days)
    read = (await store.sums(ctx, [("now", ("c", "m", "e", "w"), p.start, p.end)]))["now"]
    by: dict[str, dict[str, Sums]] = {"c": {}, "m": {}, "e": {}, "w": {}}
    for (dim, k1, _), sums in read.items():
        by[dim][k1] = sums
    by_campaign = by["c"]
    whole = _sum(by["w"].values())
    names, emails = await _names(ctx, list(by_campaign), [k for k in by["m"] if k != "-"])
    rows = [
        CampaignRow(campaign_id=k, name=names.get(k, ""), **_rates(s))
        for k, s in by_campaign.items()
        if k in names and any(s[n] for n in SERIES)
    ]
    rows.sort(key=lambda r: (-r.sent, r.name, r.campaign_id))
    return CampaignAnalytics(
        days=query.days,
        by_campaign=rows,
        by_mailbox=_mailbox_rows(emails, by["m"]),
        by_esp=_esp_rows(by["e"]),
        sentiment=_sentiment(whole),
    )


async def get_campaign_breakdown(ctx: WorkspaceContext, id: str, query: BreakdownQuery) -> Breakdown:
    """A campaign since it started, by step and A/B variant (sent, replies, positive replies, bounces, opens
    and rates; a reply counts on the email it answered, so a reply to a follow-up counts on the follow-up),
    by mailbox and by ESP, with replies by sentiment. Each step names a `winner` only when every variant has
    50 or more sends and one is ahead at 95 % confidence (two-proportion z-test on reply rate, then on
    positive-reply rate); otherwise `winner` is null and `reason` says why. Pass `chart: true` to also get a
    PNG chart of the variants."""
    await campaign_row(ctx, id)
    read = await store.all_time(ctx, ("v", "cm", "ce"), id)
    by_variant = read["v"]
    sequence = await _sequence(ctx, id)
    counted: dict[int, dict[str | None, Sums]] = defaultdict(dict)
    for key, sums in by_variant.items():
        step, _, variant = key.partition(":")
        counted[int(step)][None if variant == "-" else variant] = sums
    steps: list[StepRow] = []
    for position in sorted(set(sequence) | set(counted)):
        known = [
            (v, subject)
            for v, subject, active in sequence.get(position, [])
            if active or v in counted[position]
        ]
        order = [v for v, _ in known] + sorted(
            (v for v in counted[position] if v not in {k for k, _ in known}), key=str
        )
        subjects: dict[str | None, str] = dict(known)
        names = {v: _letter(i) for i, v in enumerate(order)}
        variants = [
            VariantRow(
                variant_id=v,
                name=names[v],
                subject=subjects.get(v),
                **_rates(counted[position].get(v, store.empty())),
            )
            for v in order
        ]
        arms = [Arm(v.variant_id, v.sent, v.replied, v.positive) for v in variants]
        verdict = winner(arms, names)
        steps.append(
            StepRow(
                step=position,
                variants=variants,
                winner=None
                if verdict.metric is None
                else Winner(
                    variant_id=verdict.variant_id,
                    metric=verdict.metric,
                    lift=verdict.lift,
                    confidence=verdict.confidence or 0.0,
                ),
                reason=verdict.reason,
            )
        )
    return Breakdown(
        campaign_id=id,
        steps=steps,
        by_mailbox=_mailbox_rows(
            (await _names(ctx, [], [k for k in read["cm"] if k != "-"]))[1], dict(read["cm"])
        ),
        by_esp=_esp_rows(dict(read["ce"])),
        sentiment=_sentiment(_sum(by_variant.values())),
    )


# --- helpers -----------------------------------------------------------------------------------------------


async def _period(
    ctx: WorkspaceContext, days: int, *, opens: bool = False, campaign_id: str | None = None
) -> tuple[str, Period, bool]:
    """The workspace's zone, the period of `days` in it, and (`opens=True`) whether a campaign in scope
    tracks opens (the workspace's, or `campaign_id`): one statement."""
    query = scoped(ctx, workspaces).select(workspaces.c.timezone)
    if opens:
        tracking = scoped(ctx, campaigns).select(campaigns.c.id).where(campaigns.c.track_opens.is_(True))
        if campaign_id is not None:
            tracking = tracking.where(campaigns.c.id == campaign_id)
        query = query.add_columns(tracking.exists().label("tracks"))
    row = (await ctx.conn.execute(query)).one_or_none()
    name = (row.timezone if row is not None else None) or "UTC"
    zone = zone_or_none(name) or zone_or_none("UTC")
    assert zone is not None
    return name, period(ctx.now, days, zone), bool(opens and row is not None and row.tracks)


def _sum(many: Any) -> Sums:
    total = store.empty()
    for sums in many:
        for k, v in sums.items():
            total[k] += v
    return total


def _counts(s: Sums) -> Counts:
    return Counts(**{k: s[k] for k in ("sent", "replied", "positive", "bounced", "opened", "won")})


def _sentiment(s: Sums) -> Sentiment:
    return Sentiment(**{k: s[k] for k in SENTIMENTS})


def _rates(s: Sums) -> dict[str, Any]:
    return {
        **{k: s[k] for k in SERIES},
        "reply_rate": rate(s["replied"], s["sent"]),
        "positive_rate": rate(s["positive"], s["sent"]),
        "bounce_rate": rate(s["bounced"], s["sent"]),
    }


def _total(days: dict[dt.date, tuple[int, ...]]) -> Sums:
    total = [0] * len(COUNTERS)
    for row in days.values():
        for i, n in enumerate(row):
            total[i] += n
    return dict(zip(COUNTERS, total, strict=True))


def _series(p: Period, days: dict[dt.date, tuple[int, ...]]) -> list[DayCounts]:
    """The period's local calendar days, each with its counters (zero for a day without a row)."""
    index = [COUNTERS.index(k) for k in SERIES]
    none = (0,) * len(COUNTERS)
    out = []
    for d in p.dates:
        row = days.get(d, none)
        out.append(DayCounts(date=d.isoformat(), **{k: row[i] for k, i in zip(SERIES, index, strict=True)}))
    return out


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"V{i + 1}"


async def _mailbox_health(ctx: WorkspaceContext) -> MailboxHealth:
    rows = (
        await ctx.conn.execute(
            scoped(ctx, mailboxes)
            .select(
                mailboxes.c.id,
                mailboxes.c.email,
                mailboxes.c.status,
                mailboxes.c.status_reason,
                mailboxes.c.sync_error,
                mailboxes.c.inbox_error,
            )
            .where(mailboxes.c.status != "paused")
            .order_by(mailboxes.c.email)
        )
    ).all()
    problems = [
        MailboxProblem(
            id=r.id,
            email=r.email,
            status=r.status,
            reason=r.status_reason or r.sync_error or ("Reading the inbox fails." if r.inbox_error else None),
        )
        for r in rows
        if r.status != "active" or r.sync_error or r.inbox_error
    ]
    # warmup emails landing in spam (a score below the threshold) or bouncing (docs/warmup.md)
    status = {r.id: r.status for r in rows}
    shown = {p.id for p in problems}
    for w in await warmup_problems(ctx, [r.id for r in rows]):
        if w.kind in ("low_score", "removed") and w.mailbox_id not in shown:
            shown.add(w.mailbox_id)
            problems.append(
                MailboxProblem(id=w.mailbox_id, email=w.email, status=status[w.mailbox_id], reason=w.message)
            )
    problems.sort(key=lambda p: p.email)
    return MailboxHealth(total=len(rows), healthy=len(rows) - len(problems), problems=problems)


async def _names(
    ctx: WorkspaceContext, campaign_ids: list[str], mailbox_ids: list[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The names of the workspace's campaigns and the addresses of its mailboxes among the ids given, in
    one statement."""
    parts = []
    if campaign_ids:
        parts.append(
            scoped(ctx, campaigns)
            .select(literal("c").label("kind"), campaigns.c.id, campaigns.c.name.label("text"))
            .where(campaigns.c.id.in_(campaign_ids))
        )
    if mailbox_ids:
        parts.append(
            scoped(ctx, mailboxes)
            .select(literal("m").label("kind"), mailboxes.c.id, mailboxes.c.email.label("text"))
            .where(mailboxes.c.id.in_(mailbox_ids))
        )
    names: dict[str, str] = {}
    emails: dict[str, str] = {}
    if parts:
        for r in await ctx.conn.execute(parts[0] if len(parts) == 1 else union_all(*parts)):
            (names if r.kind == "c" else emails)[r.id] = r.text
    return names, emails


def _mailbox_rows(emails: dict[str, str], sums: dict[str, Sums]) -> list[MailboxRow]:
    """Rows per mailbox (`emails`: the addresses of those still there)."""
    out = [
        MailboxRow(
            mailbox_id=k if k in emails else None,
            email=emails.get(k),
            **_rates(s),
        )
        for k, s in sums.items()
        if any(s[n] for n in SERIES)
    ]
    out.sort(key=lambda r: (-r.sent, r.email or "~"))
    return _merge_removed(out)


def _merge_removed(rows: list[MailboxRow]) -> list[MailboxRow]:
    """Mailboxes deleted since (their counters keep their old id) are shown as one row without an id."""
    kept = [r for r in rows if r.mailbox_id is not None]
    gone = [r for r in rows if r.mailbox_id is None]
    if not gone:
        return kept
    total = store.empty()
    for r in gone:
        for k in SERIES:
            total[k] += getattr(r, k)
    return [*kept, MailboxRow(mailbox_id=None, email=None, **_rates(total))]


def _esp_rows(sums: dict[str, Sums]) -> list[EspRow]:
    out = [EspRow(esp=k, **_rates(s)) for k, s in sums.items() if any(s[n] for n in SERIES)]
    out.sort(key=lambda r: (-r.sent, r.esp))
    return out


async def _sequence(ctx: WorkspaceContext, campaign_id: str) -> dict[int, list[tuple[str, str, bool]]]:
    """The campaign's steps now: position -> [(variant id, subject, active)] in the step's order."""
    rows = await ctx.conn.execute(
        scoped(ctx, campaign_variants)
        .select(
            campaign_steps.c.position.label("step"),
            campaign_variants.c.id,
            campaign_variants.c.subject,
            campaign_variants.c.active,
        )
        .select_from(
            campaign_variants.join(campaign_steps, campaign_steps.c.id == campaign_variants.c.step_id)
        )
        .where(campaign_variants.c.campaign_id == campaign_id)
        .order_by(campaign_steps.c.position, campaign_variants.c.position)
    )
    out: dict[int, list[tuple[str, str, bool]]] = defaultdict(list)
    for r in rows:
        out[r.step].append((r.id, r.subject, bool(r.active)))
    return out
