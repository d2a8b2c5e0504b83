"""The warmup ramp across days on the injectable clock, warmup inside the mailbox's own daily limit, the
score (null until enough data) and what a low score does: a warning on the launch checklist and a problem
in `warmup_problems`."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx

from outreach_core.kernel.context import SystemContext, WorkspaceContext, system_scope
from outreach_core.kernel.db.tables import warmup_messages
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from outreach_core.mailboxes.operations import get_mailbox, update_mailbox
from outreach_core.mailboxes.schemas import UpdateMailboxIn, WarmupIn
from outreach_core.warmup.pipeline import warmup_pass
from outreach_core.warmup.problems import warmup_problems
from outreach_core.warmup.rules import FULL_TODAY
from outreach_core.warmup.tending import refresh_scores, tend_due
from tests.campaigns.helpers import new_campaign, ok
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.mailboxes.helpers import API, seed_mailbox
from tests.warmup.helpers import messages_rows, warmup_runtime

MORNING = dt.datetime.now(dt.UTC).replace(hour=6, minute=0, second=0, microsecond=0)


async def _enable(rt: Runtime, ws: WorkspaceHandle, mailbox_id: str, **warmup: Any) -> None:
    body = UpdateMailboxIn(warmup=WarmupIn(enabled=True, **warmup))
    await rt.execute(await ws.principal(), update_mailbox, mailbox_id, body=body, prepared=None)


async def _shown(rt: Runtime, ws: WorkspaceHandle, mailbox_id: str) -> Any:
    return (await rt.read(await ws.principal(), get_mailbox, mailbox_id)).warmup


async def test_the_ramp_moves_day_by_day_and_stops_at_the_days_target(
    make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    clock = FixedClock(MORNING)
    rt = warmup_runtime(runtime, clock)
    a, b = await make_workspace(), await make_workspace()
    # mailboxes whose servers refuse connections: every hand-off fails, the plan is what is tested
    roomy = {"ramp_enabled": False, "daily_limit": 100, "ramp_started_on": MORNING.date().isoformat()}
    a_id = await seed_mailbox(a, "ramp-a@mail.test", runtime=rt, **roomy)
    small = {"ramp_enabled": False, "daily_limit": 3, "ramp_started_on": MORNING.date().isoformat()}
    b_id = await seed_mailbox(b, "ramp-b@mail.test", runtime=rt, **small)
    await _enable(rt, a, a_id, target=10, rampStart=2, rampIncrement=3)
    await _enable(rt, b, b_id, target=10, rampStart=2, rampIncrement=3)

    expected_a = [2, 5, 8, 10, 10]
    expected_b = [2, 3, 3, 3, 3]  # never above what the mailbox's own daily limit allows
    for day in range(5):
        for _ in range(70):  # passes through the day (06:00 to 23:30), a quarter of an hour apart
            await warmup_pass(rt)
            clock.advance(minutes=15)
        shown_a, shown_b = await _shown(rt, a, a_id), await _shown(rt, b, b_id)
        assert (shown_a.target_today, shown_b.target_today) == (expected_a[day], expected_b[day]), day
        # each day's plan is sent, and not one more
        assert (shown_a.sent_today, shown_b.sent_today) == (expected_a[day], expected_b[day]), day
        # warmup counts in the mailbox's own daily sends: b's limit of 3 is used up by warmup from day 2
        box = await rt.read(await b.principal(), get_mailbox, b_id)
        assert (box.sent_today, box.effective_limit) == (expected_b[day], 3)
        assert shown_a.reason is None
        assert shown_b.reason == (FULL_TODAY if day > 0 else None), day
        clock.set(MORNING + dt.timedelta(days=day + 1))
    rows = await messages_rows(runtime)
    assert len(rows) == sum(expected_a) + sum(expected_b)
    assert {r.status for r in rows} == {"failed"}  # refused connections: the sending side's failure
    assert {(r.from_mailbox_id, r.to_mailbox_id) for r in rows} == {(a_id, b_id), (b_id, a_id)}


async def _sent(rt: Runtime, sender: str, receiver: str, ago: dt.timedelta) -> str:
    token = f"wu1-{new_id('t')[-26:].lower()}"

    async def insert(ctx: SystemContext) -> None:
        row = {
            "id": new_id("wmsg"),
            "token": token,
            "from_mailbox_id": sender,
            "to_mailbox_id": receiver,
            "reply_to_id": None,
            "message_id": f"<{new_id('m')}@mail.test>",
            "subject": "Hello",
            "status": "sent",
            "sent_at": ctx.now - ago,
            "landed": None,
            "landed_at": None,
            "reply": None,
        }
        await ctx.conn.execute(system_scope(warmup_messages).insert(row))

    await rt.system(insert)
    return token


async def test_emails_never_found_go_missing_and_old_ones_are_forgotten(
    make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    rt = warmup_runtime(runtime, FixedClock(dt.datetime.now(dt.UTC)))
    ws = await make_workspace()
    a, b = await seed_mailbox(ws, "age-a@mail.test"), await seed_mailbox(ws, "age-b@mail.test")
    fresh = await _sent(rt, a, b, dt.timedelta(hours=2))
    lost = await _sent(rt, a, b, dt.timedelta(hours=25))
    await _sent(rt, a, b, dt.timedelta(days=15))
    await rt.system(tend_due)
    left = {r.token: r.landed for r in await messages_rows(runtime)}
    assert left == {fresh: None, lost: "missing"}


async def _landed(rt: Runtime, sender: str, receiver: str, inbox: int, spam: int) -> None:
    async def insert(ctx: SystemContext) -> None:
        rows = [
            {
                "id": new_id("wmsg"),
                "token": f"wu1-{new_id('t')[-26:].lower()}",
                "from_mailbox_id": sender,
                "to_mailbox_id": receiver,
                "reply_to_id": None,
                "message_id": f"<{new_id('m')}@mail.test>",
                "subject": "Hello",
                "status": "sent",
                "sent_at": ctx.now - dt.timedelta(days=1),
                "landed": "inbox" if i < inbox else "spam",
                "landed_at": ctx.now,
                "reply": None,
            }
            for i in range(inbox + spam)
        ]
        await ctx.conn.execute(*system_scope(warmup_messages).insert_many(rows))
        await refresh_scores(ctx, [sender])

    await rt.system(insert)


async def test_score_is_null_until_enough_data_and_a_low_one_warns_before_launch(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    ws, other = await make_workspace(), await make_workspace()
    rt = warmup_runtime(runtime, FixedClock(dt.datetime.now(dt.UTC)))
    mine = await seed_mailbox(ws, "score-mine@mail.test")
    theirs = await seed_mailbox(other, "score-theirs@mail.test")
    await _enable(rt, ws, mine)
    await _enable(rt, other, theirs)

    await _landed(rt, mine, theirs, inbox=3, spam=6)  # 9: not enough to say
    shown = (await http.get(f"{API}/mailboxes/{mine}", headers=ws.headers)).json()["warmup"]
    assert shown["score"] is None
    await _landed(rt, mine, theirs, inbox=0, spam=1)  # 10: 3 of 10 in the inbox
    shown = (await http.get(f"{API}/mailboxes/{mine}", headers=ws.headers)).json()["warmup"]
    assert shown["score"] == 30.0

    async def problems(ctx: WorkspaceContext) -> list[Any]:
        return await warmup_problems(ctx)

    found = await runtime.read(await ws.principal(), problems)
    assert [(p.mailbox_id, p.kind, p.score) for p in found] == [(mine, "low_score", 30.0)]
    assert await runtime.read(await other.principal(), problems) == []  # theirs is not mine

    campaign = await new_campaign(http, ws)
    await ok(http, ws, "PATCH", f"/campaigns/{campaign}", {"mailboxIds": [mine]})
    items = (await ok(http, ws, "GET", f"/campaigns/{campaign}/checklist"))["items"]
    warmup = next(i for i in items if i["id"] == "warmup")
    assert warmup["ok"] is False and warmup["required"] is False
    assert any("score-mine@mail.test" in d and "30" in d for d in warmup["details"])
    assert "score-theirs" not in str(items)
