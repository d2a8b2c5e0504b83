"""A list's member count is kept per list by triggers on `list_leads` (migration 0037): through every
writer of memberships, `GET /leads?listId=` `total` and `GET /lists` `leads` equal a count of the list's
memberships read directly, before and after the workers fold PostgreSQL's deltas."""

from __future__ import annotations

import httpx
from sqlalchemy import text

from outreach_core.targets.list_sizes import fold_list_sizes
from tests.conftest import PG_URL, MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import create, imported, listing
from tests.lists.helpers import new_label, new_list, ok


async def _memberships(ws: WorkspaceHandle) -> dict[str, int]:
    """`{list id: count(*) of its list_leads rows}` for every list of the workspace, read directly."""
    async with ws.runtime.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT l.id, (SELECT count(*) FROM list_leads m WHERE m.list_id = l.id) FROM lists l "
                    "WHERE l.workspace_id = :ws"
                ),
                {"ws": ws.workspace_id},
            )
        ).all()
    return {r[0]: int(r[1]) for r in rows}


async def _shown(http: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, int]:
    """The lists' counts as `GET /lists` shows them, each checked against its `GET /leads?listId=` total
    and against a count of its memberships."""
    shown = {x["id"]: x["leads"] for x in (await ok(http, ws, "GET", "/lists"))["lists"]}
    assert shown == await _memberships(ws)
    for list_id, n in shown.items():
        assert (await listing(http, ws, listId=list_id, pageSize=10))["total"] == n, list_id
    return shown


async def _lead_id(http: httpx.AsyncClient, ws: WorkspaceHandle, email: str) -> str:
    found = (await listing(http, ws, search=email, pageSize=100))["leads"]
    return str(next(lead["id"] for lead in found if lead["email"] == email))


async def _pending_deltas(ws: WorkspaceHandle) -> int:
    async with ws.runtime.engine.connect() as conn:
        found = await conn.execute(
            text("SELECT count(*) FROM list_size_deltas WHERE workspace_id = :ws"), {"ws": ws.workspace_id}
        )
        return int(found.scalar_one())


async def test_every_writer_of_memberships_keeps_the_lists_counts(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    a, b, c = [await new_list(http, ws, name) for name in ("A", "B", "C")]
    # a lead created with a list
    first = await create(http, ws, "first@sizes.io", listId=a)
    assert await _shown(http, ws) == {a: 1, b: 0, c: 0}

    # an import into A: new leads, a known lead (put on it) and the one already on it (not counted twice)
    rows = [{"email": f"p{i}@sizes.io"} for i in range(30)]
    known = await create(http, ws, "known@sizes.io")
    imp = await imported(
        http,
        ws,
        rows=[*rows, {"email": "known@sizes.io"}, {"email": "first@sizes.io"}],
        list={"id": a},
        final=True,
    )
    assert (imp["created"], imp["skipped"]) == (30, 2)
    assert await _shown(http, ws) == {a: 32, b: 0, c: 0}

    # `existing: update` into B of leads on A (they stay on A too) and new ones; the same rows again
    again = [{"email": f"p{i}@sizes.io", "title": "CEO"} for i in range(10)]
    again += [{"email": f"q{i}@sizes.io"} for i in range(5)]
    updated = await imported(http, ws, rows=again, list={"id": b}, existing="update")
    assert (updated["created"], updated["updated"]) == (5, 10)
    assert await _shown(http, ws) == {a: 32, b: 15, c: 0}
    await imported(http, ws, rows=again, list={"id": b}, existing="update")
    assert await _shown(http, ws) == {a: 32, b: 15, c: 0}

    # added to C through a filter, then the same again (nothing new)
    added = {"listId": c, "target": {"filter": {"search": "p1"}}}  # p1, p10-p19
    assert (await ok(http, ws, "POST", "/leads/lists/add", added))["added"] == 11
    assert (await ok(http, ws, "POST", "/leads/lists/add", added))["added"] == 0
    assert await _shown(http, ws) == {a: 32, b: 15, c: 11}

    # removed from A, some of them not on it
    removed = {"listId": a, "target": {"ids": [first["id"], known["id"], "lead_unknown"]}}
    assert (await ok(http, ws, "POST", "/leads/lists/remove", removed))["removed"] == 2
    assert await _shown(http, ws) == {a: 30, b: 15, c: 11}

    # a label moving leads to C takes them off A and B
    label = await new_label(http, ws, "Hot", triggers={"moveToListId": c})
    p2 = await _lead_id(http, ws, "p2@sizes.io")  # on A and B
    q0 = await _lead_id(http, ws, "q0@sizes.io")  # on B
    labelled = {"labelId": label, "target": {"ids": [p2, q0]}}
    assert (await ok(http, ws, "POST", "/leads/labels/add", labelled))["labeled"] == 2
    assert await _shown(http, ws) == {a: 29, b: 13, c: 13}

    # leads deleted in bulk (p1, p10-p19: on A and C, p1 on B too) and one by its id
    deleted = await ok(http, ws, "POST", "/leads/delete", {"target": {"filter": {"search": "p1"}}})
    assert deleted["deleted"] == 11
    assert await _shown(http, ws) == {a: 18, b: 12, c: 2}
    p3 = await _lead_id(http, ws, "p3@sizes.io")  # on A and B
    assert (await ok(http, ws, "POST", "/leads/delete", {"target": {"ids": [p3]}}))["deleted"] == 1
    assert await _shown(http, ws) == {a: 17, b: 11, c: 2}

    # a list deleted: its memberships go with it, the others keep their counts
    assert await ok(http, ws, "DELETE", f"/lists/{b}") == {"ok": True}
    assert await _shown(http, ws) == {a: 17, c: 2}

    # the workers fold PostgreSQL's deltas into the lists: the counts stay, the deltas go
    await ws.runtime.system(fold_list_sizes)
    assert await _pending_deltas(ws) == 0
    assert await _shown(http, ws) == {a: 17, c: 2}
    await create(http, ws, "late@sizes.io", listId=c)
    assert await _shown(http, ws) == {a: 17, c: 3}


async def test_a_deleted_workspace_leaves_no_pending_deltas(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """A workspace's deletion deletes its leads and lists (triggers, migrations 0032 and 0035), which
    appends deltas on PostgreSQL for lists that are gone: the fold drops them, and another workspace's list
    keeps its count."""
    gone, kept = await make_workspace(), await make_workspace()
    lists = {}
    for ws in (gone, kept):
        lists[ws.workspace_id] = await new_list(http, ws, "All")
        rows = [{"email": f"p{i}@sizesgone.io"} for i in range(20)]
        await imported(http, ws, rows=rows, list={"id": lists[ws.workspace_id]}, final=True)
    async with gone.runtime.engine.begin() as conn:
        await conn.execute(text("DELETE FROM workspaces WHERE id = :ws"), {"ws": gone.workspace_id})
    if PG_URL:  # the memberships deleted with the leads, counted against lists that are gone
        assert await _pending_deltas(gone) == 1
    await gone.runtime.system(fold_list_sizes)
    assert await _pending_deltas(gone) == 0
    assert await _shown(http, kept) == {lists[kept.workspace_id]: 20}
