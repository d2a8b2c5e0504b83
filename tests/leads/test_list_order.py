"""A list's pages sorted by createdAt come in the leads' own order whatever leads the list holds, however
its memberships were written (an import, the add-to-list operation, a lead created on the list)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from outreach_core.kernel.ports import FixedClock
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import create, emails, imported, listing

OLD = 30


async def _pages(http: httpx.AsyncClient, ws: WorkspaceHandle, list_id: str, direction: str) -> list[Any]:
    return [
        await listing(http, ws, listId=list_id, sort="createdAt", dir=direction, page=page, pageSize=10)
        for page in (1, 2, 3, 4)
    ]


async def _assert_in_order(
    http: httpx.AsyncClient, ws: WorkspaceHandle, list_id: str, members: list[str]
) -> None:
    """Pages 1 to 4 of the list, newest first and oldest first, are the workspace's leads in that order
    (its own listing, sorted on `leads`) kept to `members`, ten a page, with `total` the members."""
    for direction in ("desc", "asc"):
        order = [e for e in await emails(http, ws, sort="createdAt", dir=direction) if e in members]
        assert sorted(order) == sorted(members)
        pages = await _pages(http, ws, list_id, direction)
        assert [p["total"] for p in pages] == [len(members)] * 4, direction
        for number, page in enumerate(pages):
            assert [lead["email"] for lead in page["leads"]] == order[10 * number : 10 * number + 10]


async def test_a_list_of_the_oldest_leads_pages_in_their_creation_order(
    monkeypatch: pytest.MonkeyPatch, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """30 leads created first, by the API, each with a creation time EARLIER than the one before (two at a
    time share one: the id, which follows the real time, breaks the tie), then 60 newer ones by an import.
    An `existing: update` import puts the 30 old ones on a new list: its pages are in creation order, not
    in the order of the ids nor of the import (a membership keeping the import's time would tie them all and
    fall back to the ids). The window a list's page walks is 10 leads, so walking the workspace finds
    nothing. The add-to-list operation and leads created on a list give the same order."""
    from outreach_core.leads import operations

    monkeypatch.setattr(operations, "LIST_WALK_WINDOW", 10)
    ws = await make_workspace()
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
    clock = FixedClock(start)
    monkeypatch.setattr(ws.runtime, "ports", dataclasses.replace(ws.runtime.ports, clock=clock))

    old = [f"old{i:02d}@acme.io" for i in range(OLD)]
    for i, email in enumerate(old):
        clock.set(start + timedelta(seconds=OLD - i // 2))
        await create(http, ws, email, title="t0")
    clock.set(start + timedelta(minutes=5))
    newer = await imported(http, ws, final=True, rows=[{"email": f"new{i:02d}@acme.io"} for i in range(60)])
    assert newer["created"] == 60
    by_id = sorted(old, key=lambda e: e)  # created in this order, so their ids sort this way
    newest_first = [e for e in await emails(http, ws, sort="createdAt", dir="desc") if e in old]
    assert newest_first != by_id[::-1]  # the creation order is not the ids' order: the test can tell

    clock.set(start + timedelta(minutes=10))
    made = await http.post("/api/v1/lists", headers=ws.headers, json={"name": "Known"})
    list_id = made.json()["id"]
    updated = await imported(
        http,
        ws,
        final=True,
        existing="update",
        list={"id": list_id},
        rows=[{"email": e, "title": "t1"} for e in old],
    )
    assert updated["updated"] == OLD
    await _assert_in_order(http, ws, list_id, old)

    # the add-to-list operation (a target by ids and by filter), onto a second list
    clock.set(start + timedelta(minutes=15))
    second = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": "Added"})).json()["id"]
    ids = {lead["email"]: lead["id"] for lead in (await listing(http, ws, pageSize=200))["leads"]}
    some = old[::2] + [f"new{i:02d}@acme.io" for i in range(0, 60, 3)]
    added = await http.post(
        "/api/v1/leads/lists/add",
        headers=ws.headers,
        json={"listId": second, "target": {"ids": [ids[e] for e in some]}},
    )
    assert added.json() == {"added": len(some)}
    await _assert_in_order(http, ws, second, some)

    # leads created on a list, the clock going backwards, joined by the old leads added afterwards
    third = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": "Created"})).json()["id"]
    made_on_list = [f"on{i:02d}@acme.io" for i in range(12)]
    for i, email in enumerate(made_on_list):
        clock.set(start + timedelta(minutes=20) - timedelta(seconds=i))
        await create(http, ws, email, listId=third)
    added = await http.post(
        "/api/v1/leads/lists/add",
        headers=ws.headers,
        json={"listId": third, "target": {"filter": {"listId": list_id}}},
    )
    assert added.json() == {"added": OLD}
    await _assert_in_order(http, ws, third, made_on_list + old)


async def test_a_new_import_and_a_skip_import_of_known_leads_keep_the_order(
    monkeypatch: pytest.MonkeyPatch, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """An import's new leads join its list in their creation order, and an `existing: skip` import of the
    same addresses (with 20 unknown ones, created later) onto another list keeps each lead's own time."""
    from outreach_core.leads import operations

    monkeypatch.setattr(operations, "LIST_WALK_WINDOW", 10)
    ws = await make_workspace()
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
    clock = FixedClock(start)
    monkeypatch.setattr(ws.runtime, "ports", dataclasses.replace(ws.runtime.ports, clock=clock))
    first = [f"a{i:02d}@acme.io" for i in range(25)]
    for part in range(5):  # five imports, each at its own time, the later ones first in the file order
        clock.set(start + timedelta(minutes=10 - part))
        rows = [{"email": e} for e in first[5 * part : 5 * part + 5]]
        made = await imported(http, ws, final=True, rows=rows, list={"name": f"Part {part}"})
        assert made["created"] == 5
    clock.set(start + timedelta(minutes=30))
    everyone = first + [f"b{i:02d}@acme.io" for i in range(20)]
    skipped = await imported(
        http, ws, final=True, rows=[{"email": e} for e in everyone], list={"name": "Again"}
    )
    assert (skipped["created"], skipped["skipped"]) == (20, 25)
    lists = (await http.get("/api/v1/lists", headers=ws.headers)).json()["lists"]
    again = next(item["id"] for item in lists if item["name"] == "Again")
    await _assert_in_order(http, ws, again, everyone)
