"""SQLite merges a queued part a slice of `OUTREACH_IMPORT_SLICE_ROWS` rows per transaction, so that a chunk
request never waits for more than one slice while its import receives chunks; the outcome is exactly that of
merging whole parts, and the counters balance after every slice (PostgreSQL merges whole parts: the same
outcome in fewer steps)."""

from __future__ import annotations

import dataclasses

import httpx

from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.leads.helpers import emails, import_chunk, listing, suppress
from tests.leads.test_import import COUNTERS, balanced, counters, fetch
from workers import imports


async def test_a_part_merged_in_slices_counts_every_row_once(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    await suppress(http, ws, "blocked@slice.test")
    known = await http.post("/api/v1/leads", headers=ws.headers, json={"email": "known@slice.test"})
    assert known.status_code in (200, 201), known.text
    list_id = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": "Slices"})).json()["id"]
    # duplicates inside a slice, across slices of one part, and across parts; a suppressed, a known address
    first = [f"a{i}@slice.test" for i in range(9)]
    first += ["a1@slice.test", "blocked@slice.test", "known@slice.test"]
    second = ["a8@slice.test", "b0@slice.test", "B0@Slice.test", "not an address", "b1@slice.test"]
    settings = ws.runtime.settings.model_copy(update={"import_slice_rows": 4})
    runtime = Runtime(settings, engine=ws.runtime.engine, ports=dataclasses.replace(ws.runtime.ports))

    async def merged_step_by_step() -> list[int]:
        queued = [(await fetch(http, ws, import_id))["queued"]]
        while queued[-1]:
            assert await imports.tick(runtime) > 0
            now = await fetch(http, ws, import_id)
            assert balanced(now) and now["queued"] < queued[-1], now
            queued.append(now["queued"])
        return queued

    response = await import_chunk(http, ws, rows=[{"email": e} for e in first], list={"id": list_id})
    import_id = response.json()["id"]
    # more chunks may come: SQLite merges 4 rows per transaction, so a chunk would wait for 4 rows at most
    assert await merged_step_by_step() == ([12, 8, 4, 0] if ws.runtime.is_sqlite else [12, 0])
    await import_chunk(http, ws, importId=import_id, rows=[{"email": e} for e in second], final=True)
    # the final chunk is in: no chunk of this import can wait any more, the rest goes in whole parts
    assert await merged_step_by_step() == [5, 0]

    merged = await fetch(http, ws, import_id)
    assert counters(merged) == {k: 0 for k in COUNTERS} | {
        "rows": 17,
        "created": 11,  # a0-a8, b0, b1
        "skipped": 1,  # known
        "suppressed": 1,
        "duplicates": 3,  # a1 again, a8 again, B0
        "invalid": 1,
    }
    assert merged["status"] in ("enriching", "done")
    members = await emails(http, ws, listId=list_id)
    assert sorted(members) == sorted(
        [f"a{i}@slice.test" for i in range(9)] + ["b0@slice.test", "b1@slice.test", "known@slice.test"]
    )
    assert (await listing(http, ws, search="@slice.test"))["total"] == 12
