"""What a person learns from the checklist and the launch answer: which route and tool fix a failing item,
and when the first email will go out."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest

from outreach_app.asgi import build_app
from outreach_core.catalog import all_endpoints
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from tests.campaigns.helpers import add_lead, add_mailbox, new_campaign, ok
from tests.campaigns.test_lifecycle import READY_SEQUENCE, items_by_id
from tests.conftest import MakeWorkspace, serving

ROUTE = re.compile(r"\b(GET|POST|PATCH|PUT|DELETE) (/api/v1/[^\s,;]+)[^()]* \(tool (\w+)\)")
FRIDAY_EVENING = datetime(2026, 11, 27, 23, 0, tzinfo=UTC)  # 18:00 in New York, Saturday in Berlin


def _endpoint_for(method: str, path: str) -> str | None:
    """The tool of the catalogue's endpoint that `method path` (ids or `{placeholders}` in it) names."""
    for e in all_endpoints():
        pattern = re.sub(r"\\\{\w+\\\}", r"[^/]+", re.escape(f"/api/v1{e.path}"))
        if e.method == method and re.fullmatch(pattern, path):
            return e.name if e.tool else None
    return None


async def test_checklist_messages_name_the_route_and_tool_that_fix_them(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan=None)
    cid = await new_campaign(http, ws)
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", {"trackOpens": True})
    items = items_by_id(await ok(http, ws, "GET", f"/campaigns/{cid}/checklist"))
    failing = {i: item["message"] for i, item in items.items() if not item["ok"]}
    assert set(failing) == {"mailboxes", "sequence", "unsubscribe", "leads", "plan", "tracking_link_domain"}
    assert "outreach plan set" in failing.pop("plan")  # an operator command: no route or tool sets a plan
    for item, message in failing.items():
        routes = ROUTE.findall(message)
        assert routes, (item, message)
        for method, path, tool in routes:
            assert _endpoint_for(method, path.rstrip(".,;")) == tool, (item, message)

    # following the messages fixes the items
    method, path, _ = ROUTE.findall(failing["leads"])[0]
    lead = await add_lead(ws, f"fix-{cid[-6:].lower()}@checklist.test")
    await ok(http, ws, method, path.removeprefix("/api/v1"), {"leadIds": [lead]})
    method, path, _ = ROUTE.findall(failing["mailboxes"])[0]
    box = await add_mailbox(ws, f"fix-{cid[-6:].lower()}@sender.test")
    await ok(http, ws, method, path.removeprefix("/api/v1"), {"mailboxIds": [box]})
    method, path, _ = next(r for r in ROUTE.findall(failing["sequence"]) if r[2] == "set_sequence")
    await ok(http, ws, method, path.removeprefix("/api/v1"), READY_SEQUENCE)
    items = items_by_id(await ok(http, ws, "GET", f"/campaigns/{cid}/checklist"))
    assert all(items[i]["ok"] for i in ("leads", "mailboxes", "sequence", "unsubscribe"))


@pytest.fixture
async def friday_evening(runtime: Runtime) -> AsyncIterator[tuple[httpx.AsyncClient, FixedClock]]:
    """The whole app served at a clock stopped on Friday 27 November 2026, 23:00 UTC."""
    clock = FixedClock(FRIDAY_EVENING)
    app = build_app(
        Runtime(runtime.settings, engine=runtime.engine, ports=Ports(clock=clock)), flush_usage=False
    )
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
        yield client, clock


async def test_the_launch_answer_says_when_the_first_email_goes_out(
    friday_evening: tuple[httpx.AsyncClient, FixedClock], make_workspace: MakeWorkspace
) -> None:
    http, clock = friday_evening
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    box = await add_mailbox(ws, f"sender-{cid[-6:].lower()}@launch.test")
    await ok(http, ws, "PUT", f"/campaigns/{cid}/sequence", READY_SEQUENCE)
    await ok(
        http, ws, "PATCH", f"/campaigns/{cid}", {"mailboxIds": [box], "timezoneFallback": "Europe/Berlin"}
    )
    people = [
        await add_lead(ws, f"berlin-{cid[-6:].lower()}@launch.test"),  # no time zone: the fallback's
        await add_lead(ws, f"ny-{cid[-6:].lower()}@launch.test", timezone="America/New_York"),
    ]
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": people})

    # the default window, 09:00-17:00 Monday to Friday, is closed everywhere until Monday in Berlin
    launched = await ok(http, ws, "POST", f"/campaigns/{cid}/launch")
    assert launched["status"] == "running" and launched["nextSendAt"] == "2026-11-30T08:00:00.000Z"
    assert launched["message"].startswith(
        "Sending starts at 09:00 Europe/Berlin on Monday 2026-11-30 (2026-11-30T08:00:00Z)"
    )
    window = "09:00-17:00 Mon-Fri in each lead's time zone (Europe/Berlin for leads without one)"
    assert window in launched["message"]

    # a lead in Tokyo is the first whose Monday morning comes
    await ok(http, ws, "POST", f"/campaigns/{cid}/pause")
    tokyo = await add_lead(ws, f"tokyo-{cid[-6:].lower()}@launch.test", timezone="Asia/Tokyo")
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [tokyo]})
    launched = await ok(http, ws, "POST", f"/campaigns/{cid}/launch")
    assert launched["nextSendAt"] == "2026-11-30T00:00:00.000Z"
    assert "09:00 Asia/Tokyo on Monday 2026-11-30 (2026-11-30T00:00:00Z)" in launched["message"]

    # startOn holds everyone back until that day in the campaign's time zone
    await ok(http, ws, "POST", f"/campaigns/{cid}/pause")
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", {"startOn": "2026-12-02"})
    launched = await ok(http, ws, "POST", f"/campaigns/{cid}/launch")
    assert launched["nextSendAt"] == "2026-12-02T00:00:00.000Z"  # 09:00 in Tokyo on Wednesday

    # inside the window: now
    await ok(http, ws, "POST", f"/campaigns/{cid}/pause")
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", {"startOn": None, "windowStart": 0, "windowEnd": 1440})
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", {"days": 127})
    launched = await ok(http, ws, "POST", f"/campaigns/{cid}/launch")
    assert (
        launched["nextSendAt"] == "2026-11-27T23:00:00.000Z" == clock.now().strftime("%Y-%m-%dT%H:%M:%S.000Z")
    )
    assert launched["message"].startswith("Sending starts now")
