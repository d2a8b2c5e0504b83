"""The send forecast (`GET /campaigns/{id}/forecast`, `forecast_campaign`): against what the sender then
actually sends over simulated days (the injectable clock, real SMTP hand-offs to aiosmtpd), in the launch
question and answer, and its bad input. The pure simulation's limits are in `test_forecast_rules.py`."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, time, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

from mcp_server.server import api_key_principal_source, build_mcp
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import suppressions
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.ports import Clock, FixedClock
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mail_servers import SmtpServer, Users
from tests.sending.helpers import (
    FIRST,
    FOLLOW_UP,
    add_lead,
    launched_campaign,
    rows,
    smtp_mailbox,
    update_rows,
)
from workers import sender

API = "/api/v1"


async def _forecast(http: httpx.AsyncClient, ws: WorkspaceHandle, cid: str) -> dict[str, Any]:
    response = await http.get(f"{API}/campaigns/{cid}/forecast", headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _by_day(found: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {
        d["date"]: (d["firstEmails"], d["followUps"])
        for d in found["days"]
        if d["firstEmails"] or d["followUps"]
    }


async def _suppress(ws: WorkspaceHandle, kind: str, value: str) -> None:
    async def insert(ctx: WorkspaceContext) -> None:
        row = {"id": new_id("sup"), "kind": kind, "value": value, "created_at": datetime.now(UTC)}
        await ctx.conn.execute(scoped(ctx, suppressions).insert(row))

    await ws.runtime.execute(await ws.principal(), insert)


async def _run_sender(ws: WorkspaceHandle, clock: FixedClock, until: datetime, step: timedelta) -> None:
    """Sender ticks on the hour (a mailbox's gap is far shorter than the step) from the clock's time on."""
    while clock.now() < until:
        while await sender.tick(ws.runtime):
            pass
        clock.advance(seconds=step.total_seconds())


async def _sent_by_day(ws: WorkspaceHandle, cid: str, tz: tzinfo = UTC) -> dict[str, tuple[int, int]]:
    counts: Counter[tuple[str, bool]] = Counter()
    for s in await rows(ws, "sends", campaign_id=cid):
        assert s.status == "sent", (s.status, s.error)
        counts[(s.sent_at.astimezone(tz).date().isoformat(), s.step > 0)] += 1
    days = sorted({d for d, _ in counts})
    return {d: (counts[(d, False)], counts[(d, True)]) for d in days}


async def test_the_forecast_is_what_the_sender_then_sends_day_by_day(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """Two mailboxes ramping up (2, 3, 4, 5 a day each), weekdays 09:00-17:00 in each lead's time zone (UTC
    and New York), a follow-up two days after the first email: the forecast made before launch is, day by
    day, what the sender sends (the days are UTC days: the campaign's fallback zone)."""
    ws = await make_workspace()
    server = smtp_servers["tls"]
    real: Clock = ws.runtime.ports.clock
    start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    clock = FixedClock(start)
    ramp = {
        "ramp_enabled": True,
        "ramp_start": 2,
        "ramp_increment": 1,
        "daily_limit": 5,
        "ramp_started_on": start.date().isoformat(),
        "min_gap_s": 60,
        "max_gap_s": 60,
    }
    boxes = [await smtp_mailbox(ws, server, mail_users, **ramp) for _ in range(2)]
    leads = [await add_lead(ws, f"utc{i}@forecast.example") for i in range(14)]
    leads += [await add_lead(ws, f"ny{i}@forecast.example", timezone="America/New_York") for i in range(8)]
    cid = await launched_campaign(
        http,
        ws,
        boxes,
        leads,
        launch=False,
        windowStart=9 * 60,
        windowEnd=17 * 60,
        days=31,
        timezoneFallback="UTC",
    )
    ws.runtime.ports.clock = clock
    try:
        found = await _forecast(http, ws, cid)
        launched = await http.post(f"{API}/campaigns/{cid}/launch", headers=ws.headers)
        assert launched.status_code == 200, launched.text
        assert launched.json()["forecast"] == found
        last = datetime.fromisoformat(found["lastEmailOn"]).replace(tzinfo=UTC) + timedelta(days=2)
        await _run_sender(ws, clock, last, timedelta(hours=1))
    finally:
        ws.runtime.ports.clock = real
    assert found["leads"] == 22 and found["unfinished"] == 0 and found["timezone"] == "UTC"
    assert set(found["limitedBy"]) == {"rampUp", "mailboxLimits"}
    sent = await _sent_by_day(ws, cid)
    assert sum(f for f, _ in sent.values()) == 22 and sum(u for _, u in sent.values()) == 22
    assert _by_day(found) == sent
    assert found["lastFirstEmailOn"] == max(d for d, (f, _) in sent.items() if f)
    assert found["lastEmailOn"] == max(sent)
    assert found["days"][0]["date"] == min(sent)
    weekend = [d for d in found["days"] if datetime.fromisoformat(d["date"]).weekday() >= 5]
    assert all(d["firstEmails"] == d["followUps"] == 0 for d in weekend)


async def test_the_forecast_holds_where_the_window_gaps_and_daily_cap_bind(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """One hour a weekday (09:00-10:00 Berlin), two mailboxes one email per 10 minutes each (12 an hour in
    all), at most 5 first emails a day, two follow-ups a day apart: the window and `dailyCap` bind, and the
    forecast is again what the sender sends, day by day (Berlin days). The clock moves 10 minutes a tick
    inside the window and jumps from its end to the next opening (nothing can go out in between)."""
    ws = await make_workspace()
    server = smtp_servers["tls"]
    real: Clock = ws.runtime.ports.clock
    berlin = ZoneInfo("Europe/Berlin")
    today = datetime.now(berlin).date() + timedelta(days=1)
    start = datetime.combine(today, time(8), tzinfo=berlin).astimezone(UTC)
    clock = FixedClock(start)
    boxes = [await smtp_mailbox(ws, server, mail_users, min_gap_s=600, max_gap_s=600) for _ in range(2)]
    leads = [await add_lead(ws, f"hour{i}@forecast.example") for i in range(9)]
    leads += [await add_lead(ws, f"hb{i}@forecast.example", timezone="Europe/Berlin") for i in range(9)]
    cid = await launched_campaign(
        http,
        ws,
        boxes,
        leads,
        steps=[
            {"variants": [FIRST]},
            {"waitDays": 1, "variants": [FOLLOW_UP]},
            {"waitDays": 1, "variants": [FOLLOW_UP]},
        ],
        launch=False,
        windowStart=9 * 60,
        windowEnd=10 * 60,
        days=31,
        dailyCap=5,
        timezoneFallback="Europe/Berlin",
    )
    ws.runtime.ports.clock = clock
    try:
        found = await _forecast(http, ws, cid)
        assert (await http.post(f"{API}/campaigns/{cid}/launch", headers=ws.headers)).status_code == 200
        last = datetime.fromisoformat(found["lastEmailOn"]).replace(tzinfo=berlin) + timedelta(days=1)
        while clock.now() < last:
            while await sender.tick(ws.runtime):
                pass
            local = clock.advance(minutes=10).astimezone(berlin)
            if local.hour >= 10 or local.hour < 9:
                day = local.date() + timedelta(days=1 if local.hour >= 10 else 0)
                clock.set(datetime.combine(day, time(9), tzinfo=berlin).astimezone(UTC))
    finally:
        ws.runtime.ports.clock = real
    assert {"dailyCap", "window"} <= set(found["limitedBy"])
    sent = await _sent_by_day(ws, cid, berlin)
    assert _by_day(found) == sent
    assert sum(f for f, _ in sent.values()) == 18 and sum(u for _, u in sent.values()) == 36


async def test_the_launch_question_and_answer_carry_the_forecast(
    http: httpx.AsyncClient,
    runtime: Any,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    box = await smtp_mailbox(ws, smtp_servers["tls"], mail_users, daily_limit=3)
    leads = [await add_lead(ws, f"ask{i}@forecast.example") for i in range(7)]
    one_step = [{"variants": [FIRST]}]
    cid = await launched_campaign(http, ws, [box], leads, steps=one_step, launch=False, dailyCap=2)
    found = await _forecast(http, ws, cid)
    assert found["limitedBy"] == ["dailyCap"]
    assert [d["firstEmails"] for d in found["days"] if d["firstEmails"]] == [2, 2, 2, 1]
    assert found["message"].startswith("Forecast for 7 leads")
    asked: list[str] = []

    async def decline(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    async with Client(
        build_mcp(runtime, api_key_principal_source(ws.api_key)), elicitation_callback=decline
    ) as c:
        declined = await c.call_tool("launch_campaign", {"id": cid})
    assert declined.is_error and len(asked) == 1
    assert found["message"] in asked[0]
    answer = await http.post(f"{API}/campaigns/{cid}/launch", headers=ws.headers)
    assert answer.status_code == 200
    assert answer.json()["forecast"]["days"] == found["days"]
    assert found["message"] in answer.json()["message"]


async def test_a_campaign_of_another_workspace_or_none_is_not_found(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    created = await http.post(f"{API}/campaigns", headers=theirs.headers, json={"name": "Theirs"})
    their_id = created.json()["id"]
    for cid in (their_id, "cmp_missing"):
        response = await http.get(f"{API}/campaigns/{cid}/forecast", headers=mine.headers)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    empty = await _forecast(http, theirs, their_id)
    assert empty == {
        "days": [],
        "lastFirstEmailOn": None,
        "lastEmailOn": None,
        "limitedBy": [],
        "timezone": "UTC",
        "leads": 0,
        "unfinished": 0,
        "message": "Forecast: no lead is waiting for an email.",
    }


async def test_leads_the_stop_rules_leave_out_are_not_forecast(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """Unsubscribed, bounced, invalid, suppressed (address or domain) and, with skipRisky, risky leads get no
    email from the sender, so the forecast counts none for them."""
    ws = await make_workspace()
    box = await smtp_mailbox(ws, smtp_servers["tls"], mail_users)
    fine = [await add_lead(ws, f"fine{i}@stops-forecast.example") for i in range(3)]
    left_out = [
        await add_lead(ws, "gone@stops-forecast.example", status="unsubscribed"),
        await add_lead(ws, "bounced@stops-forecast.example", status="bounced"),
        await add_lead(ws, "nobody@stops-forecast.example", verify="invalid"),
        await add_lead(ws, "risky@stops-forecast.example", verify="catch_all"),
        await add_lead(ws, "listed@stops-forecast.example"),
        await add_lead(ws, "someone@blocked-forecast.example"),
    ]
    cid = await launched_campaign(http, ws, [box], fine + left_out, launch=False)
    await http.patch(f"{API}/campaigns/{cid}", headers=ws.headers, json={"skipRisky": True})
    # entries as the sender finds them, whatever the lead's status says (POST /suppressions also sets it)
    await _suppress(ws, "email", "listed@stops-forecast.example")
    await _suppress(ws, "domain", "blocked-forecast.example")
    found = await _forecast(http, ws, cid)
    assert found["leads"] == 3
    assert (
        sum(d["firstEmails"] for d in found["days"]) == 3 and sum(d["followUps"] for d in found["days"]) == 3
    )


async def test_the_forecast_stops_a_company_as_the_sender_does(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    """With `stopForCompany`, a lead at the domain of a lead of the campaign that replied gets no email (a
    free-mail domain is no company): the forecast leaves out the leads the sender then stops, and counts
    the emails the sender then sends, day by day."""
    ws = await make_workspace()
    real: Clock = ws.runtime.ports.clock
    clock = FixedClock(
        datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    )
    box = await smtp_mailbox(ws, smtp_servers["tls"], mail_users)
    replied = [await add_lead(ws, "ann@acme-forecast.example"), await add_lead(ws, "gil@gmail.com")]
    colleagues = [await add_lead(ws, f"c{i}@acme-forecast.example") for i in range(2)]
    others = [await add_lead(ws, "gus@gmail.com"), await add_lead(ws, "ola@other-forecast.example")]
    cid = await launched_campaign(http, ws, [box], replied + colleagues + others, launch=False)
    for lead_id in replied:  # as the inbox leaves a lead that replied (stopOnReply)
        await update_rows(ws, "campaign_leads", {"status": "replied"}, campaign_id=cid, lead_id=lead_id)
    assert (await _forecast(http, ws, cid))["leads"] == 4  # stopForCompany is off
    await http.patch(f"{API}/campaigns/{cid}", headers=ws.headers, json={"stopForCompany": True})
    ws.runtime.ports.clock = clock
    try:
        found = await _forecast(http, ws, cid)
        launched = await http.post(f"{API}/campaigns/{cid}/launch", headers=ws.headers)
        assert launched.status_code == 200, launched.text
        last = datetime.fromisoformat(found["lastEmailOn"]).replace(tzinfo=UTC) + timedelta(days=2)
        await _run_sender(ws, clock, last, timedelta(hours=1))
    finally:
        ws.runtime.ports.clock = real
    assert found["leads"] == 2 and found["unfinished"] == 0
    assert _by_day(found) == await _sent_by_day(ws, cid)
    assert {s.lead_id for s in await rows(ws, "sends", campaign_id=cid)} == set(others)
    for lead_id in colleagues:
        (cl,) = await rows(ws, "campaign_leads", campaign_id=cid, lead_id=lead_id)
        assert (cl.status, cl.reason) == ("stopped", "Someone at the same company replied.")
