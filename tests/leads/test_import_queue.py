"""The import queue: rows wait in storage form (snake_case, the `leads` columns), and rows an earlier version
queued in wire form (camelCase) still merge after an upgrade."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from sqlalchemy import select, update

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.side_queue import side_parts, side_queue, side_rows
from outreach_core.kernel.db.tables import import_queue
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import create, import_chunk, listing, merge_imports


async def _queued(ws: WorkspaceHandle) -> list[Any]:
    """The rows of the parts waiting, oldest first: in SQLite's side file, or in `import_queue`."""
    if ws.runtime.is_sqlite:
        async with side_queue(ws.runtime.engine).reading() as side:
            payloads = await side.execute(
                select(side_rows.c.rows)
                .join(
                    side_parts,
                    (side_parts.c.import_id == side_rows.c.import_id) & (side_parts.c.seq == side_rows.c.seq),
                )
                .where(side_parts.c.workspace_id == ws.workspace_id)
                .order_by(side_rows.c.seq)
            )
            return [orjson.loads(p) for p in payloads.scalars()]

    async def read(ctx: WorkspaceContext) -> list[Any]:
        stmt = scoped(ctx, import_queue).select(import_queue.c.rows).order_by(import_queue.c.seq)
        return list((await ctx.conn.execute(stmt)).scalars())

    return await ws.runtime.read(await ws.principal(), read)


async def _requeue(ws: WorkspaceHandle, rows: list[dict[str, Any]]) -> None:
    """Replace the queued part's rows, as an earlier version would have written them."""
    if ws.runtime.is_sqlite:
        async with side_queue(ws.runtime.engine).writing() as side:
            mine = select(side_parts.c.import_id).where(side_parts.c.workspace_id == ws.workspace_id)
            await side.execute(
                update(side_rows).where(side_rows.c.import_id.in_(mine)).values(rows=orjson.dumps(rows))
            )
        return

    async def write(ctx: WorkspaceContext) -> None:
        await ctx.conn.execute(scoped(ctx, import_queue).update().values(rows=rows))

    await ws.runtime.execute(await ws.principal(), write)


async def _lead(http: httpx.AsyncClient, ws: WorkspaceHandle, email: str) -> dict[str, Any]:
    [found] = (await listing(http, ws, search=email))["leads"]
    response = await http.get(f"/api/v1/leads/{found['id']}", headers=ws.headers)
    return response.json()  # type: ignore[no-any-return]


async def test_rows_wait_in_storage_form(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    row = {
        "email": "ann@acme.io",
        "firstName": "Ann",
        "lastName": None,
        "linkedin": "x",
        "custom": {"tier": 1},
    }
    response = await import_chunk(http, ws, rows=[row])
    assert response.status_code == 200, response.text
    assert await _queued(ws) == [
        [{"email": "ann@acme.io", "first_name": "Ann", "linkedin": "x", "custom": {"tier": 1}}]
    ]


async def test_rows_queued_in_wire_form_by_an_earlier_version_still_merge(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    await create(http, ws, "old@acme.io", firstName="Old", company="Old Co", custom={"a": 1})
    rows = [
        {
            "email": "new@acme.io",
            "firstName": "Nia",
            "lastName": "Ode",
            "company": "Acme",
            "country": "germany",
        },
        {"email": "old@acme.io", "lastName": "Timer", "timezone": "Europe/Berlin", "custom": {"b": 2}},
    ]
    response = await import_chunk(
        http, ws, rows=[{"email": r["email"]} for r in rows], existing="update", final=True
    )
    assert response.status_code == 200, response.text
    await _requeue(ws, rows)  # what the queue held before the upgrade: wire form
    await merge_imports(ws)

    done = (await http.get(f"/api/v1/leads/imports/{response.json()['id']}", headers=ws.headers)).json()
    assert (done["created"], done["updated"], done["queued"]) == (1, 1, 0)
    new = await _lead(http, ws, "new@acme.io")
    assert (new["firstName"], new["lastName"], new["company"], new["country"]) == ("Nia", "Ode", "Acme", "DE")
    old = await _lead(http, ws, "old@acme.io")
    assert (old["firstName"], old["lastName"], old["company"]) == ("Old", "Timer", "Old Co")
    assert (old["timezone"], old["custom"]) == ("Europe/Berlin", {"a": 1, "b": 2})
