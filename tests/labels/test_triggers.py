"""Label triggers: suppress, move to list, and timers run by the `label-timers` worker on a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import label_timers as label_timers_table
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.labels.operations import label_leads, unlabel_leads
from outreach_core.labels.timers import run_due_label_timers
from outreach_core.targets.schemas import LabelTargetIn, LeadTarget
from tests.conftest import MakeWorkspace
from tests.lists.helpers import (
    add_leads,
    carriers,
    lead_rows,
    lists_of,
    new_label,
    new_list,
    ok,
    statuses,
    suppressed_values,
    timers,
)
from workers import label_timers
from workers.registry import select


def clocked(runtime: Runtime) -> tuple[Runtime, FixedClock]:
    """A runtime on the session database whose clock only moves when told to."""
    clock = FixedClock(datetime.now(UTC).replace(microsecond=0))
    return Runtime(runtime.settings, engine=runtime.engine, ports=Ports(clock=clock)), clock


def target(*ids: str) -> LeadTarget:
    return LeadTarget(ids=list(ids))


async def test_suppress_trigger_follows_the_status_rules(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    label = await new_label(http, ws, "No thanks", type="negative", triggers={"suppress": True})
    by_status = {
        s: (await add_leads(ws, f"{s}@sup.test", status=s))[0]
        for s in ("active", "replied", "interested", "won", "bounced", "unsubscribed", "suppressed")
    }
    already = (await add_leads(ws, "already@sup.test"))[0]
    await ok(http, ws, "POST", "/suppressions", {"entries": ["already@sup.test"], "reason": "manual"})
    before = await lead_rows(ws, list(by_status.values()))

    ids = [*by_status.values(), already]
    body = {"target": {"ids": ids}, "labelId": label}
    assert (await ok(http, ws, "POST", "/leads/labels/add", body))["labeled"] == 8

    assert await statuses(ws, list(by_status.values())) == [
        "suppressed",
        "suppressed",
        "suppressed",
        "won",
        "bounced",
        "unsubscribed",
        "suppressed",
    ]
    after = await lead_rows(ws, list(by_status.values()))
    for s in ("active", "replied", "interested"):
        assert after[by_status[s]].updated_at is not None and before[by_status[s]].updated_at is None
    for s in ("won", "bounced", "unsubscribed"):
        assert after[by_status[s]].updated_at is None
    values = await suppressed_values(ws)
    assert values["already@sup.test"] == ("email", "manual")  # kept as it was
    assert {v: r for v, r in values.items() if v != "already@sup.test"} == {
        f"{s}@sup.test": ("email", "label: No thanks") for s in by_status
    }

    # labelling again runs nothing again
    body = {"target": {"all": True}, "labelId": label}
    assert (await ok(http, ws, "POST", "/leads/labels/add", body))["labeled"] == 0


async def test_move_trigger_keeps_only_the_target_list(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    a = await new_list(http, ws, "A")
    b = await new_list(http, ws, "B")
    c = await new_list(http, ws, "C")
    moved, stays, already = await add_leads(ws, "m@move.test", "s@move.test", "x@move.test")
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": [moved, stays]}, "listId": a})
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": [moved]}, "listId": b})
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": [already]}, "listId": c})
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": [already]}, "listId": b})
    label = await new_label(http, ws, "Qualified", triggers={"moveToListId": c})

    body = {"target": {"ids": [moved, already]}, "labelId": label}
    assert (await ok(http, ws, "POST", "/leads/labels/add", body))["labeled"] == 2
    assert await lists_of(ws, moved) == {c}
    assert await lists_of(ws, already) == {c}
    assert await lists_of(ws, stays) == {a}
    counts = {x["name"]: x["leads"] for x in (await ok(http, ws, "GET", "/lists"))["lists"]}
    assert counts == {"A": 1, "B": 0, "C": 2}


async def test_timers_remove_and_apply_after_days(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    ws = await make_workspace()
    rt, clock = clocked(runtime)
    start = clock.now()
    follow_list = await new_list(http, ws, "Follow-ups")
    follow_up = await new_label(
        http, ws, "Follow up", triggers={"moveToListId": follow_list, "removeAfterDays": 5, "suppress": True}
    )
    interested = await new_label(
        http,
        ws,
        "Hot lead",
        type="positive",
        triggers={"removeAfterDays": 2, "applyLabel": {"labelId": follow_up, "afterDays": 3}},
    )
    first, second, untouched = await add_leads(ws, "one@timer.test", "two@timer.test", "three@timer.test")
    principal = await ws.principal()

    labeled = await rt.execute(
        principal, label_leads, LabelTargetIn(target=target(first, second), label_id=interested)
    )
    assert labeled.labeled == 2
    pending = await timers(ws)
    assert sorted((t[0], t[2], t[3], t[4]) for t in pending) == sorted(
        [
            (first, "remove", None, start + timedelta(days=2)),
            (second, "remove", None, start + timedelta(days=2)),
            (first, "apply", follow_up, start + timedelta(days=3)),
            (second, "apply", follow_up, start + timedelta(days=3)),
        ]
    )
    # labelling again starts no new timers
    again = await rt.execute(principal, label_leads, LabelTargetIn(target=target(first), label_id=interested))
    assert again.labeled == 0 and len(await timers(ws)) == 4

    clock.advance(days=1)
    assert await rt.execute(principal, run_due_label_timers) == 0
    assert await carriers(ws, interested) == {first, second}

    clock.advance(days=1)  # day 2: Interested comes off
    assert await rt.execute(principal, run_due_label_timers) == 2
    assert await carriers(ws, interested) == set()
    assert [t[2] for t in await timers(ws)] == ["apply", "apply"]  # the label's own plan keeps running

    clock.advance(days=1)  # day 3: Follow up goes on, and its own triggers run
    assert await label_timers.tick(rt) >= 2
    assert await carriers(ws, follow_up) == {first, second}
    assert await lists_of(ws, first) == {follow_list} and await lists_of(ws, second) == {follow_list}
    assert await statuses(ws, [first, second, untouched]) == ["suppressed", "suppressed", "active"]
    assert set((await suppressed_values(ws)).keys()) == {"one@timer.test", "two@timer.test"}
    assert sorted((t[0], t[2], t[4]) for t in await timers(ws)) == sorted(
        [(first, "remove", start + timedelta(days=8)), (second, "remove", start + timedelta(days=8))]
    )

    # taking a label off by hand cancels the timers it started for that lead
    removed = await rt.execute(
        principal, unlabel_leads, LabelTargetIn(target=target(second), label_id=follow_up)
    )
    assert removed.removed == 1
    assert [t[0] for t in await timers(ws)] == [first]

    clock.advance(days=5)  # day 8
    assert await rt.execute(principal, run_due_label_timers) == 1
    assert await carriers(ws, follow_up) == set()
    assert await timers(ws) == []
    assert await rt.execute(principal, run_due_label_timers) == 0


async def test_timers_run_in_batches_and_skip_deleted_leads(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    ws = await make_workspace()
    rt, clock = clocked(runtime)
    label = await new_label(http, ws, "Short", triggers={"removeAfterDays": 1})
    ids = await add_leads(ws, *(f"b{i}@batch.test" for i in range(7)))
    principal = await ws.principal()
    await rt.execute(principal, label_leads, LabelTargetIn(target=LeadTarget(all=True), label_id=label))
    assert len(await timers(ws)) == 7
    clock.advance(days=1, seconds=1)
    assert await rt.execute(principal, run_due_label_timers, 3) == 3
    assert len(await carriers(ws, label)) == 4
    assert await rt.execute(principal, run_due_label_timers, 3) == 3
    assert await rt.execute(principal, run_due_label_timers, 3) == 1
    assert await carriers(ws, label) == set() and await timers(ws) == []
    assert len(ids) == 7


def test_worker_is_registered() -> None:
    (worker,) = select(["label-timers"])
    assert worker.tick is label_timers.tick and worker.interval_s == 30.0


async def test_worker_keeps_workspaces_apart(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    rt, clock = clocked(runtime)
    my_label = await new_label(http, mine, "Temp", triggers={"removeAfterDays": 1})
    their_label = await new_label(http, theirs, "Temp", triggers={"removeAfterDays": 3})
    my_lead = (await add_leads(mine, "same@iso-timer.test"))[0]
    their_lead = (await add_leads(theirs, "same@iso-timer.test"))[0]
    for ws, label, lead in ((mine, my_label, my_lead), (theirs, their_label, their_lead)):
        await rt.execute(
            await ws.principal(), label_leads, LabelTargetIn(target=target(lead), label_id=label)
        )
    clock.advance(days=2)
    assert await label_timers.tick(rt) >= 1
    assert await carriers(mine, my_label) == set()
    assert await carriers(theirs, their_label) == {their_lead}
    assert len(await timers(theirs)) == 1
    clock.advance(days=2)
    assert await label_timers.tick(rt) >= 1
    assert await carriers(theirs, their_label) == set()


async def test_tick_runs_nothing_when_nothing_is_due(runtime: Any) -> None:
    clock = FixedClock(datetime(2000, 1, 1, tzinfo=UTC))
    rt = Runtime(runtime.settings, engine=runtime.engine, ports=Ports(clock=clock))
    assert await label_timers.tick(rt) == 0


async def test_a_failing_workspace_does_not_hold_up_the_others(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    broken, healthy = await make_workspace(), await make_workspace()
    rt, clock = clocked(runtime)
    broken_label = await new_label(http, broken, "Broken")
    broken_lead = (await add_leads(broken, "x@broken.test"))[0]
    label = await new_label(http, healthy, "Temp", triggers={"removeAfterDays": 1})
    lead = (await add_leads(healthy, "y@healthy.test"))[0]
    await rt.execute(
        await healthy.principal(), label_leads, LabelTargetIn(target=target(lead), label_id=label)
    )

    async def poison(ctx: WorkspaceContext, delete: bool = False) -> None:
        # an apply timer without a label to apply cannot run (only corrupt data can look like this)
        t = scoped(ctx, label_timers_table)
        if delete:
            await ctx.conn.execute(t.delete().where(label_timers_table.c.id == "tmr_poison"))
            return
        row = {
            "id": "tmr_poison",
            "lead_id": broken_lead,
            "label_id": broken_label,
            "action": "apply",
            "target_label_id": None,
            "due_at": clock.now(),
        }
        await ctx.conn.execute(t.insert(row))

    await rt.execute(await broken.principal(), poison)
    try:
        clock.advance(days=2)
        with pytest.raises(ExceptionGroup) as failed:
            await label_timers.tick(rt)
        assert len(failed.value.exceptions) == 1
        assert await carriers(healthy, label) == set()  # the healthy workspace's timer ran anyway
    finally:
        await rt.execute(await broken.principal(), poison, True)
    assert await timers(broken) == []
