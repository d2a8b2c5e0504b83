"""Counts from hand-built ledgers with known answers: calendar days in the workspace zone (across a DST
change), previous period, replies once per lead and against the email they answered, sentiment moved by a
later label, heatmap in the lead's own zone, countries, mailbox health, nothing sent."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from outreach_core.analytics.rules import period
from tests.analytics.conftest import NOW, Reader
from tests.analytics.ledger import Ledger

UTC = dt.UTC


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_nothing_sent_is_zeros_and_not_sending(ledger: Ledger, reader: Reader) -> None:
    o = await reader.overview(7)
    assert o.sending is False
    assert [d.date for d in o.series] == [f"2026-03-{d}" for d in range(25, 32)]
    assert all(d.sent == d.replied == d.bounced == 0 for d in o.series)
    assert (
        o.totals.model_dump()
        == o.previous.model_dump()
        == dict.fromkeys(("sent", "replied", "positive", "bounced", "opened", "won"), 0)
    )
    assert o.heatmap == [[0] * 24 for _ in range(7)]
    assert o.countries == [] and o.replies_without_country == 0
    assert o.tracks_opens is False
    assert o.mailboxes.total == 0 and o.mailboxes.problems == []


async def test_calendar_days_in_the_workspace_zone_across_the_dst_change(
    ledger: Ledger, reader: Reader
) -> None:
    await ledger.timezone("Europe/Berlin")
    box = await ledger.mailbox()
    campaign, _ = await ledger.campaign()
    sends = {
        "2026-03-24T22:59:00": "previous",  # 23:59 CET on the 24th: the period before
        "2026-03-24T23:00:00": "2026-03-25",  # midnight CET: the first day
        "2026-03-28T23:30:00": "2026-03-29",  # 00:30 CET, the night of the change
        "2026-03-29T21:59:00": "2026-03-29",  # 23:59 CEST
        "2026-03-29T22:30:00": "2026-03-30",  # 00:30 CEST
        "2026-03-31T11:00:00": "2026-03-31",
    }
    for when in sends:
        await ledger.send(campaign, await ledger.lead(), box, at=at(when))
    o = await reader.overview(7)
    got = {d.date: d.sent for d in o.series if d.sent}
    assert got == {"2026-03-25": 1, "2026-03-29": 2, "2026-03-30": 1, "2026-03-31": 1}
    assert o.totals.sent == 5 and o.previous.sent == 1
    assert o.timezone == "Europe/Berlin" and o.sending is True
    # the same counters read in another zone: day boundaries move, nothing is rewritten
    await ledger.timezone("UTC")
    o = await reader.overview(7)
    utc = {d.date: d.sent for d in o.series if d.sent}
    assert utc == {"2026-03-28": 1, "2026-03-29": 2, "2026-03-31": 1}
    assert o.totals.sent == 4 and o.previous.sent == 2


async def test_replies_once_per_lead_on_the_email_answered_with_current_sentiment(
    ledger: Ledger, reader: Reader
) -> None:
    box = await ledger.mailbox()
    campaign, variants = await ledger.campaign([1, 1])
    first, follow = variants[0][0], variants[1][0]
    lead = await ledger.lead(country="DE")
    s1 = await ledger.send(campaign, lead, box, at=at("2026-03-27T09:00:00"), step=0, variant_id=first)
    s2 = await ledger.send(campaign, lead, box, at=at("2026-03-29T09:00:00"), step=1, variant_id=follow)
    thread = await ledger.reply(s2, at=at("2026-03-30T10:00:00"), label="positive")
    await ledger.reply(s2, at=at("2026-03-30T11:00:00"))  # the same lead again: still one reply
    other = await ledger.lead()
    s3 = await ledger.send(campaign, other, box, at=at("2026-03-27T09:00:00"), step=0, variant_id=first)
    await ledger.reply(s3, at=at("2026-03-28T09:00:00"), label="neutral")
    assert s1

    o = await reader.overview(7)
    assert (o.totals.sent, o.totals.replied, o.totals.positive) == (3, 2, 1)
    assert o.sentiment.model_dump() == {"positive": 1, "negative": 0, "neutral": 1, "warning": 0}
    assert [(c.code, c.replies) for c in o.countries] == [("DE", 1)] and o.replies_without_country == 1
    b = await reader.breakdown(campaign)
    by_step = {s.step: s.variants[0] for s in b.steps}
    assert (by_step[0].sent, by_step[0].replied) == (2, 1)  # the other lead answered the first email
    assert (by_step[1].sent, by_step[1].replied, by_step[1].positive) == (1, 1, 1)  # on the follow-up

    await ledger.relabel(thread, "negative")  # a person changes the label: the reply moves
    o = await reader.overview(7)
    assert o.sentiment.model_dump() == {"positive": 0, "negative": 1, "neutral": 1, "warning": 0}
    assert (o.totals.replied, o.totals.positive) == (2, 0)
    b = await reader.breakdown(campaign)
    assert b.sentiment.negative == 1 and b.steps[1].variants[0].positive == 0


async def test_heatmap_in_each_leads_zone_across_midnight(ledger: Ledger, reader: Reader) -> None:
    await ledger.timezone("Europe/Berlin")
    box = await ledger.mailbox()
    campaign, _ = await ledger.campaign()
    new_york = await ledger.lead(timezone="America/New_York")
    nowhere = await ledger.lead()
    s1 = await ledger.send(campaign, new_york, box, at=at("2026-03-30T14:00:00"))
    s2 = await ledger.send(campaign, nowhere, box, at=at("2026-03-30T14:00:00"))
    # 03:30 UTC on Tuesday the 31st: 23:30 on Monday in New York, 05:30 on Tuesday in Berlin
    await ledger.reply(s1, at=at("2026-03-31T03:30:00"))
    await ledger.reply(s2, at=at("2026-03-31T03:30:00"))
    o = await reader.overview(7)
    assert o.heatmap[0][23] == 1  # Monday 23:00 in the lead's zone
    assert o.heatmap[1][5] == 1  # the workspace's zone for a lead without one
    assert sum(map(sum, o.heatmap)) == 2
    assert {d.date: d.replied for d in o.series if d.replied} == {"2026-03-31": 2}


async def test_bounces_wins_and_soft_bounce_resend(ledger: Ledger, reader: Reader) -> None:
    box = await ledger.mailbox()
    campaign, _ = await ledger.campaign()
    lead = await ledger.lead()
    refused = await ledger.send(campaign, lead, box, at=at("2026-03-30T09:00:00"), status="bounced")
    later = await ledger.send(campaign, await ledger.lead(), box, at=at("2026-03-30T09:00:00"))
    await ledger.hard_bounce(later)
    soft = await ledger.send(campaign, await ledger.lead(), box, at=at("2026-03-29T09:00:00"))
    await ledger.soft_bounce(soft)
    await ledger.resend(soft, at("2026-03-30T21:00:00"))
    await ledger.won(lead, at("2026-03-30T12:00:00"), campaign)
    await ledger.won(lead, at("2026-03-31T08:00:00"), campaign)  # marked won again: one win, the latest
    assert refused
    o = await reader.overview(7)
    assert (o.totals.sent, o.totals.bounced, o.totals.won) == (3, 2, 1)
    assert {d.date: (d.sent, d.bounced) for d in o.series if d.sent} == {"2026-03-30": (3, 2)}
    s = await reader.stats(7, campaign)
    assert (s.totals.sent, s.totals.bounced, s.totals.won) == (3, 2, 1)
    a = await reader.analytics(7)
    row = a.by_campaign[0]
    assert (row.campaign_id, row.sent, row.bounced, row.bounce_rate) == (campaign, 3, 2, round(2 / 3, 4))


async def test_mailbox_health(ledger: Ledger, reader: Reader) -> None:
    await ledger.mailbox()
    await ledger.mailbox(status="paused")
    broken = await ledger.mailbox(status="error", status_reason="Login failed")
    syncing = await ledger.mailbox(sync_error="IMAP timeout")
    o = await reader.overview(7)
    assert (o.mailboxes.total, o.mailboxes.healthy) == (3, 1)
    assert {(p.id, p.status, p.reason) for p in o.mailboxes.problems} == {
        (broken, "error", "Login failed"),
        (syncing, "active", "IMAP timeout"),
    }


async def test_by_mailbox_and_esp_in_the_period(ledger: Ledger, reader: Reader) -> None:
    a_box, b_box = await ledger.mailbox(), await ledger.mailbox()
    campaign, _ = await ledger.campaign()
    for box, esp in ((a_box, "google"), (a_box, "microsoft"), (b_box, "google")):
        await ledger.send(campaign, await ledger.lead(esp=esp), box, at=NOW - dt.timedelta(hours=2))
    await ledger.send(campaign, await ledger.lead(), b_box, at=NOW - dt.timedelta(days=10))  # before
    a = await reader.analytics(7)
    assert {(r.mailbox_id, r.sent) for r in a.by_mailbox} == {(a_box, 2), (b_box, 1)}
    assert [(r.esp, r.sent) for r in a.by_esp] == [("google", 2), ("microsoft", 1)]
    a30 = await reader.analytics(30)
    assert {(r.mailbox_id, r.sent) for r in a30.by_mailbox} == {(a_box, 2), (b_box, 2)}


async def test_label_type_change_and_label_deletion_move_replies(ledger: Ledger, reader: Reader) -> None:
    from outreach_core.labels.operations import delete_label, update_label
    from outreach_core.labels.schemas import UpdateLabelIn

    box = await ledger.mailbox()
    campaign, _ = await ledger.campaign()
    sent = await ledger.send(campaign, await ledger.lead(), box, at=at("2026-03-30T09:00:00"))
    await ledger.reply(sent, at=at("2026-03-30T10:00:00"), label="positive")
    label_id = ledger.labels["positive"]
    principal = await ledger.ws.principal()

    await reader.runtime.execute(principal, update_label, label_id, body=UpdateLabelIn(type="warning"))
    o = await reader.overview(7)
    assert o.sentiment.model_dump() == {"positive": 0, "negative": 0, "neutral": 0, "warning": 1}
    assert (o.totals.replied, o.totals.positive) == (1, 0)

    await reader.runtime.execute(principal, delete_label, label_id)
    o = await reader.overview(7)
    assert o.sentiment.model_dump() == dict.fromkeys(("positive", "negative", "neutral", "warning"), 0)
    assert o.totals.replied == 1


async def test_long_periods_read_weeks_days_and_hours_and_count_each_send_once(
    ledger: Ledger, reader: Reader
) -> None:
    """Sends every 41 hours over 190 days, read as 7-, 30- and 90-day periods (and the periods before) in
    zones with a DST change inside, a half-hour offset and a half-hour DST change: the series (each hour on
    the local day it begins in), the totals, `previous` and campaign analytics (the weekly, daily and
    hourly rollup rows of `rules.pieces`) agree with the sends counted one by one."""
    boxes = [await ledger.mailbox(), await ledger.mailbox()]
    campaigns = [(await ledger.campaign())[0], (await ledger.campaign())[0]]
    made: list[tuple[dt.datetime, str, str]] = []
    when = NOW - dt.timedelta(days=190, minutes=17)
    while when < NOW:
        i = len(made)
        made.append((when, campaigns[i % 2], boxes[i // 2 % 2]))
        await ledger.send(campaigns[i % 2], await ledger.lead(), boxes[i // 2 % 2], at=when)
        when += dt.timedelta(hours=41)

    def hour(x: dt.datetime) -> dt.datetime:
        return x.replace(minute=0, second=0, microsecond=0)

    def ceil(x: dt.datetime) -> dt.datetime:
        return x if hour(x) == x else hour(x) + dt.timedelta(hours=1)

    for zone_name in ("UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"):
        await ledger.timezone(zone_name)
        zone = ZoneInfo(zone_name)
        for days in (7, 30, 90):
            p = period(NOW, days, zone)
            series: dict[str, int] = {}
            for sent_at, _, _ in made:
                if p.start <= hour(sent_at) < p.end:
                    day = hour(sent_at).astimezone(zone).date().isoformat()
                    series[day] = series.get(day, 0) + 1
            before = sum(1 for s, _, _ in made if hour(p.previous_start) <= hour(s) < ceil(p.start))
            o = await reader.overview(days)
            assert {d.date: d.sent for d in o.series if d.sent} == series, (zone_name, days)
            assert o.totals.sent == sum(series.values()) and o.previous.sent == before, (zone_name, days)
            inside = [(c, b) for s, c, b in made if hour(p.start) <= hour(s) < ceil(p.end)]
            a = await reader.analytics(days)
            assert {r.campaign_id: r.sent for r in a.by_campaign} == {
                c: n for c in campaigns if (n := sum(1 for k, _ in inside if k == c))
            }, (zone_name, days)
            assert {r.mailbox_id: r.sent for r in a.by_mailbox} == {
                b: n for b in boxes if (n := sum(1 for _, k in inside if k == b))
            }, (zone_name, days)
            one = await reader.stats(days, campaigns[0])
            assert one.totals.sent == sum(
                1 for s, c, _ in made if c == campaigns[0] and p.start <= hour(s) < p.end
            ), (zone_name, days)
