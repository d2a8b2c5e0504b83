"""PATCH /mailboxes/{id} `warmup`: what is stored and shown, what is refused, and what a pool of one says."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from outreach_core.warmup.pipeline import warmup_pass
from outreach_core.warmup.rules import POOL_OF_ONE
from tests.conftest import MakeWorkspace
from tests.mailboxes.helpers import API, field_paths, seed_mailbox
from tests.warmup.helpers import warmup_runtime


async def test_warmup_settings_are_stored_and_shown(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    mailbox_id = await seed_mailbox(ws, "warm-settings@mail.test")
    before = (await http.get(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)).json()["warmup"]
    assert before["enabled"] is False and before["targetToday"] == 0 and before["score"] is None

    body = {"warmup": {"enabled": True, "target": 30, "rampStart": 3, "rampIncrement": 4, "replyRate": 40}}
    response = await http.patch(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json=body)
    assert response.status_code == 200, response.text
    warmup = response.json()["mailbox"]["warmup"]
    assert warmup == {
        "enabled": True,
        "score": None,
        "sentToday": 0,
        "targetToday": 3,  # day 1 of the warmup ramp
        "target": 30,
        "rampStart": 3,
        "rampIncrement": 4,
        "replyRate": 40,
        "reason": None,
    }
    # a partial change keeps the rest
    response = await http.patch(
        f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json={"warmup": {"replyRate": 0}}
    )
    assert response.json()["mailbox"]["warmup"] | {"replyRate": 40} == warmup
    listed = (await http.get(f"{API}/mailboxes", headers=ws.headers)).json()["mailboxes"]
    assert listed[0]["warmup"]["replyRate"] == 0 and listed[0]["warmup"]["enabled"] is True

    off = await http.patch(
        f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json={"warmup": {"enabled": False}}
    )
    assert off.json()["mailbox"]["warmup"]["enabled"] is False
    assert off.json()["mailbox"]["warmup"]["targetToday"] == 0


async def test_bad_warmup_input_is_refused_and_nothing_is_stored(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    mailbox_id = await seed_mailbox(ws, "warm-bad@mail.test")
    url = f"{API}/mailboxes/{mailbox_id}"
    cases = [
        ({"warmup": {"target": 0}}, "warmup.target"),
        ({"warmup": {"target": 101}}, "warmup.target"),
        ({"warmup": {"rampStart": 51}}, "warmup.rampStart"),
        ({"warmup": {"rampIncrement": 0}}, "warmup.rampIncrement"),
        ({"warmup": {"replyRate": 101}}, "warmup.replyRate"),
        ({"warmup": {"replyRate": -1}}, "warmup.replyRate"),
        ({"warmup": {"enabled": "sometimes"}}, "warmup.enabled"),
        ({"warmup": {"enabled": None}}, "warmup.enabled"),
        ({"warmup": {"score": 100}}, "warmup.score"),  # computed, never set
        ({"warmup": None}, "warmup"),
    ]
    for body, path in cases:
        response = await http.patch(url, headers=ws.headers, json={"displayName": "Changed", **body})
        assert path in field_paths(response), (body, response.text)
    shown = (await http.get(url, headers=ws.headers)).json()
    assert shown["displayName"] is None and shown["warmup"]["enabled"] is False


async def test_a_pool_of_one_waits_and_says_why(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, runtime: Runtime
) -> None:
    ws = await make_workspace()
    mailbox_id = await seed_mailbox(ws, "warm-alone@mail.test")
    await http.patch(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json={"warmup": {"enabled": True}})
    rt = warmup_runtime(runtime, FixedClock(datetime.now(UTC)))
    assert await warmup_pass(rt) == 0
    warmup = (await http.get(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)).json()["warmup"]
    assert warmup["reason"] == POOL_OF_ONE and warmup["sentToday"] == 0

    # a paused mailbox says so instead
    await http.patch(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json={"status": "paused"})
    await warmup_pass(rt)
    warmup = (await http.get(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers)).json()["warmup"]
    assert "not active" in warmup["reason"]
