"""Chunked import: exact counters on hand-built data, retries, limits and refusals."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import MakeWorkspace
from tests.enrichment.helpers import unique_domain
from tests.leads.helpers import create, emails, import_chunk, imported, listing, merge_imports, suppress

COUNTERS = (
    "rows",
    "created",
    "updated",
    "skipped",
    "duplicates",
    "suppressed",
    "invalid",
    "overLimit",
    "queued",
)


def counters(imp: dict[str, Any]) -> dict[str, int]:
    return {k: imp[k] for k in COUNTERS}


def balanced(imp: dict[str, Any]) -> bool:
    return imp["rows"] == sum(imp[k] for k in COUNTERS if k != "rows")


def accepted(rows: int, **client: int) -> dict[str, int]:
    """The counters of an import whose rows are received but not merged yet."""
    return {k: 0 for k in COUNTERS} | {"rows": rows, "queued": rows - sum(client.values())} | client


async def fetch(http: httpx.AsyncClient, ws: Any, import_id: str) -> dict[str, Any]:
    return (await http.get(f"/api/v1/leads/imports/{import_id}", headers=ws.headers)).json()  # type: ignore[no-any-return]


async def test_counters_are_exact_across_chunks_and_retries(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    await create(http, ws, "already@acme.io", company="Old Co")
    await suppress(http, ws, "blocked@acme.io", "spam.example")
    chunk1 = [
        {"email": "one@acme.io", "firstName": "One"},
        {"email": " ONE@acme.io "},  # duplicate within the chunk
        {"email": "two@acme.io", "company": "Two Co"},
        {"email": "not-an-address"},  # invalid
        {"email": None},  # invalid
        {"email": "blocked@acme.io"},  # suppressed address
        {"email": "x@spam.example"},  # suppressed domain
        {"email": "already@acme.io", "company": "New Co"},  # existing: skipped
        {"email": "three@acme.io"},
    ]
    first = await import_chunk(http, ws, fileName="leads.csv", rows=chunk1, list={"name": "Conference"})
    assert first.status_code == 200, first.text
    imp = first.json()
    assert imp["status"] == "importing" and imp["fileName"] == "leads.csv" and imp["listName"] == "Conference"
    assert counters(imp) == accepted(9) and balanced(imp)  # received; the import worker has not run yet
    assert (await listing(http, ws))["total"] == 1
    retried_early = (
        await import_chunk(
            http, ws, importId=imp["id"], fileName="leads.csv", rows=chunk1, list={"name": "Conference"}
        )
    ).json()
    assert counters(retried_early) == accepted(9)  # a retry before the merge queues nothing more
    await merge_imports(ws)
    assert counters(await fetch(http, ws, imp["id"])) == {
        "rows": 9,
        "created": 3,
        "updated": 0,
        "skipped": 1,
        "duplicates": 1,
        "suppressed": 2,
        "invalid": 2,
        "overLimit": 0,
        "queued": 0,
    }

    chunk2 = [
        {"email": "two@acme.io"},  # duplicate of an earlier chunk
        {"email": "blocked@acme.io"},  # duplicate of an earlier chunk (was suppressed there)
        {"email": "four@acme.io", "lastName": "Four"},
        {"email": "@bad"},
    ]
    body2 = {"importId": imp["id"], "rows": chunk2, "clientInvalid": 3, "clientDuplicates": 2, "final": True}
    second = (await import_chunk(http, ws, **body2)).json()
    assert second["status"] == "importing" and second["queued"] == 4 and balanced(second)
    assert second["rows"] == 9 + 4 + 5 and second["invalid"] == 2 + 3 and second["duplicates"] == 1 + 2
    await merge_imports(ws)
    second = await fetch(http, ws, imp["id"])
    expected = {
        "rows": 9 + 4 + 5,
        "created": 4,
        "updated": 0,
        "skipped": 1,
        "duplicates": 1 + 2 + 2,
        "suppressed": 2,
        "invalid": 2 + 1 + 3,
        "overLimit": 0,
        "queued": 0,
    }
    assert counters(second) == expected and balanced(second)
    assert second["status"] == "enriching"

    retried = (await import_chunk(http, ws, **body2)).json()  # a client retry of the last chunk
    assert counters(retried) == expected
    retried_first = (
        await import_chunk(
            http, ws, importId=imp["id"], fileName="leads.csv", rows=chunk1, list={"name": "Conference"}
        )
    ).json()
    assert counters(retried_first) == expected

    stored = await emails(http, ws, sort="email", dir="asc")
    assert stored == ["already@acme.io", "four@acme.io", "one@acme.io", "three@acme.io", "two@acme.io"]
    assert (await listing(http, ws, search="old co"))["total"] == 1  # skipped lead untouched
    in_list = await emails(http, ws, listId=imp["listId"], sort="email", dir="asc")
    assert in_list == ["already@acme.io", "four@acme.io", "one@acme.io", "three@acme.io", "two@acme.io"]
    fetched = (await http.get(f"/api/v1/leads/imports/{imp['id']}", headers=ws.headers)).json()
    assert counters(fetched) == expected
    listed = (await http.get("/api/v1/leads/imports", headers=ws.headers)).json()["imports"]
    assert [i["id"] for i in listed] == [imp["id"]]

    late = await import_chunk(http, ws, importId=imp["id"], rows=[{"email": "late@acme.io"}])
    assert late.status_code == 409 and late.json()["error"]["code"] == "invalid_state"


async def test_existing_update_fills_in_new_values(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    lead = await create(http, ws, "keep@acme.io", firstName="Kim", company="Old", custom={"a": 1})
    imp = await imported(
        http,
        ws,
        existing="update",
        final=True,
        rows=[{"email": "KEEP@acme.io", "company": "New", "firstName": "  ", "custom": {"b": 2}}],
    )
    assert counters(imp) == {k: 0 for k in COUNTERS} | {"rows": 1, "updated": 1}
    after = (await http.get(f"/api/v1/leads/{lead['id']}", headers=ws.headers)).json()
    assert after["company"] == "New" and after["firstName"] == "Kim" and after["custom"] == {"a": 1, "b": 2}
    assert await emails(http, ws, search="new") == ["keep@acme.io"]


async def test_existing_update_writes_only_leads_it_changes(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """A row that would change nothing leaves its lead untouched (not even `updatedAt`) and still counts as
    updated; a changed row changes what it fills and nothing else."""
    ws = await make_workspace()
    same = await create(http, ws, "same@acme.io", firstName="Sam", company="Acme", phone="+49 30 1234567")
    moved = await create(http, ws, "moved@acme.io", firstName="Mo", company="Acme", custom={"a": 1})
    rows = [
        {"email": "same@acme.io", "firstName": "Sam", "company": "Acme", "phone": "+49 30 1234567"},
        {"email": "moved@acme.io", "firstName": "Mo", "title": "CEO", "custom": {"a": 1}},
    ]
    imp = await imported(http, ws, existing="update", final=True, rows=rows)
    assert counters(imp) == {k: 0 for k in COUNTERS} | {"rows": 2, "updated": 2}
    untouched = (await http.get(f"/api/v1/leads/{same['id']}", headers=ws.headers)).json()
    assert untouched == same
    changed = (await http.get(f"/api/v1/leads/{moved['id']}", headers=ws.headers)).json()
    assert changed["title"] == "CEO" and changed["updatedAt"] is not None
    assert {k: v for k, v in changed.items() if k not in ("title", "updatedAt")} == {
        k: v for k, v in moved.items() if k not in ("title", "updatedAt")
    }


async def test_a_file_imported_again_updates_across_parts_and_stores_what_is_new(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """Once an import has met more known leads than it created, a part's known addresses are looked up
    before storing (PostgreSQL); the counters and values are the same either way."""
    ws = await make_workspace()
    for n in range(3):
        await create(http, ws, f"k{n}@acme.io", company="Old")
    first = await imported(http, ws, existing="update", rows=[{"email": "k0@acme.io", "company": "New"}])
    rows = [{"email": "k1@acme.io", "title": "CEO"}, {"email": "k2@acme.io"}, {"email": "fresh@acme.io"}]
    second = await imported(http, ws, importId=first["id"], rows=rows, final=True)
    assert counters(second) == {k: 0 for k in COUNTERS} | {"rows": 4, "updated": 3, "created": 1}
    assert await emails(http, ws, search="new") == ["k0@acme.io"]
    assert await emails(http, ws, search="old", sort="email", dir="asc") == ["k1@acme.io", "k2@acme.io"]
    assert (await listing(http, ws, search="fresh@"))["total"] == 1


async def test_refusals_keep_what_was_imported(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    imp = await imported(http, ws, rows=[{"email": f"r{i}@acme.io"} for i in range(10)])
    too_many = await import_chunk(
        http, ws, importId=imp["id"], rows=[{"email": f"x{i}@acme.io"} for i in range(5001)]
    )
    assert too_many.status_code == 413 and too_many.json()["error"]["code"] == "payload_too_large"
    bad_row = await import_chunk(
        http, ws, importId=imp["id"], rows=[{"email": "ok@acme.io", "title": "x" * 301}]
    )
    assert bad_row.status_code == 422
    assert bad_row.json()["error"]["details"]["fields"][0]["path"] == "rows.0.title"
    unknown = await import_chunk(http, ws, importId="imp_missing", rows=[{"email": "u@acme.io"}])
    assert unknown.status_code == 404
    unknown_list = await import_chunk(http, ws, rows=[{"email": "u@acme.io"}], list={"id": "list_missing"})
    assert unknown_list.status_code == 404
    await merge_imports(ws)
    assert (await listing(http, ws))["total"] == 10
    fetched = await fetch(http, ws, imp["id"])
    assert fetched["created"] == 10 and fetched["rows"] == 10 and fetched["queued"] == 0


async def test_import_needs_an_active_plan(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace(plan=None)
    response = await import_chunk(http, ws, rows=[{"email": "p@acme.io"}])
    assert response.status_code == 402 and response.json()["error"]["code"] == "plan_required"
    assert (await listing(http, ws))["total"] == 0


async def test_contacts_limit_imports_what_fits_and_counts_the_rest(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan="starter")  # 2,000 contacts
    first = await imported(http, ws, rows=[{"email": f"c{i}@acme.io"} for i in range(1995)])
    assert first["created"] == 1995
    rows = [{"email": f"d{i}@acme.io"} for i in range(7)] + [{"email": "c1@acme.io"}]
    over = await imported(http, ws, importId=first["id"], rows=rows)
    assert counters(over) == {k: 0 for k in COUNTERS} | {
        "rows": 2003,
        "created": 2000,
        "overLimit": 2,
        "duplicates": 1,
    }
    assert (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()["total"] == 2000
    assert "d5@acme.io" not in await emails(http, ws, search="d5@")
    again = await imported(http, ws, importId=first["id"], rows=[{"email": "d6@acme.io"}], final=True)
    assert again["duplicates"] == 2 and again["overLimit"] == 2 and balanced(again)  # met once, counted once


async def test_near_the_limit_known_and_suppressed_since_are_counted_as_before(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """A part that would pass the contacts limit, holding a known lead: the first new ones that fit are
    stored, the known one skipped. A lead this import created and the user suppressed since is a duplicate
    when met again, not a suppressed address; so are the addresses it counted over the limit or skipped."""
    ws = await make_workspace(plan="starter")  # 2,000 contacts
    filled = await imported(http, ws, rows=[{"email": f"c{i}@acme.io"} for i in range(1998)], final=True)
    assert filled["created"] == 1998
    rows = [{"email": f"n{i}@acme.io"} for i in range(3)] + [{"email": "c5@acme.io"}, {"email": "n3@acme.io"}]
    first = await imported(http, ws, rows=rows, list={"name": "Late"})
    assert counters(first) == {k: 0 for k in COUNTERS} | {
        "rows": 5,
        "created": 2,
        "skipped": 1,
        "overLimit": 2,
    }
    await suppress(http, ws, "n0@acme.io")
    rows = [{"email": "n0@acme.io"}, {"email": "n2@acme.io"}, {"email": "c5@acme.io"}]
    second = await imported(http, ws, importId=first["id"], rows=rows, final=True)
    assert counters(second) == counters(first) | {"rows": 8, "duplicates": 3} and balanced(second)
    in_list = await emails(http, ws, listId=first["listId"], sort="email", dir="asc")
    assert in_list == ["c5@acme.io", "n0@acme.io", "n1@acme.io"]


@pytest.mark.parametrize("field", ["clientInvalid", "clientDuplicates"])
async def test_client_counts_are_validated(
    field: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    response = await import_chunk(http, ws, rows=[], **{field: -1})
    assert response.status_code == 422


async def test_final_chunk_starts_background_work(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    imp = (await import_chunk(http, ws, rows=[{"email": "bg@acme.io"}], final=True)).json()
    assert imp["status"] == "importing" and imp["queued"] == 1  # accepted; the import worker merges it
    assert (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()["importing"] is True
    await merge_imports(ws)
    merged = await fetch(http, ws, imp["id"])
    assert merged["status"] == "enriching" and merged["created"] == 1 and merged["finishedAt"] is None
    assert (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()["importing"] is True
    empty_final = (await import_chunk(http, ws, rows=[], final=True)).json()
    assert empty_final["status"] == "enriching"  # nothing queued: it moves on at once


async def test_import_is_done_once_every_lead_is_enriched(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_runtime: Any, dns_server: Any
) -> None:
    from outreach_core.enrichment.pipeline import enrich_pending

    ws = await make_workspace()
    domain = unique_domain("importco", "example")
    dns_server.add(domain, "MX", "10 aspmx.l.google.com.")
    rows = [{"email": f"e{i}@{domain}", "phone": "+49 30 1234567"} for i in range(20)] + [
        {"email": "ann@outlook.com"}
    ]
    imp = await imported(http, ws, rows=rows, final=True)
    assert imp["status"] == "enriching" and imp["enrichedAt"] is None
    await dns_runtime.system(enrich_pending, workspace_id=ws.workspace_id)
    done = (await http.get(f"/api/v1/leads/imports/{imp['id']}", headers=ws.headers)).json()
    assert done["status"] == "done" and done["enrichedAt"] and done["finishedAt"]
    assert dns_server.queries_for(domain) == 1  # one lookup for twenty leads
    leads = {lead["email"]: lead for lead in (await listing(http, ws, pageSize=50))["leads"]}
    assert leads[f"e0@{domain}"]["esp"] == "google" and leads[f"e0@{domain}"]["country"] == "DE"
    assert leads["ann@outlook.com"]["esp"] == "microsoft"
    stats = (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()
    assert stats["importing"] is False and stats["esp"]["google"] == 20 and stats["esp"]["microsoft"] == 1


async def test_concurrent_import_workers_merge_each_part_once_in_order(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """Several import workers at once (PostgreSQL: `SKIP LOCKED` on the import) never merge one part twice
    or a later part before an earlier one: the counters come out exact."""
    import asyncio

    from workers import imports

    ws = await make_workspace()
    first = await import_chunk(http, ws, rows=[{"email": f"a{i}@acme.io"} for i in range(300)])
    import_id = first.json()["id"]
    second = [{"email": "a7@acme.io"}] + [{"email": f"b{i}@acme.io"} for i in range(300)]
    await import_chunk(http, ws, importId=import_id, rows=second, final=True)
    await asyncio.gather(*(imports.tick(ws.runtime) for _ in range(3)))
    await merge_imports(ws)
    merged = await fetch(http, ws, import_id)
    assert counters(merged) == {k: 0 for k in COUNTERS} | {"rows": 601, "created": 600, "duplicates": 1}
    assert merged["status"] == "enriching" and (await listing(http, ws))["total"] == 600


async def test_chunks_of_one_import_sent_in_parallel_are_all_counted(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """A client sending chunks of one import at once: each is queued and merged once (PostgreSQL locks the
    import's row in the request, so parallel chunks do not collide in the queue)."""
    import asyncio

    ws = await make_workspace()
    first = (await import_chunk(http, ws, rows=[{"email": "first@acme.io"}])).json()
    chunks = [[{"email": f"p{k}-{i}@acme.io"} for i in range(50)] for k in range(4)]
    sent = await asyncio.gather(*(import_chunk(http, ws, importId=first["id"], rows=c) for c in chunks))
    assert [r.status_code for r in sent] == [200] * 4
    await merge_imports(ws)
    merged = await fetch(http, ws, first["id"])
    assert counters(merged) == {k: 0 for k in COUNTERS} | {"rows": 201, "created": 201}


async def test_parts_queued_together_are_merged_in_order_with_exact_counters(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """Three parts queued before the import worker runs, merged one after the other: an address in two
    parts is created once and then counted as a duplicate, a known lead is skipped once, and the contacts
    limit holds across the parts."""
    ws = await make_workspace(plan="starter")  # 2,000 contacts
    await create(http, ws, "known@acme.io")
    await suppress(http, ws, "blocked@acme.io")
    rows = [{"email": f"p{i}@acme.io"} for i in range(1_000)] + [{"email": "known@acme.io"}]
    first = await import_chunk(http, ws, rows=rows, list={"name": "Ahead"})
    import_id = first.json()["id"]
    rows = [{"email": "p7@acme.io"}, {"email": "known@acme.io"}, {"email": "blocked@acme.io"}]
    await import_chunk(
        http, ws, importId=import_id, rows=rows + [{"email": f"q{i}@acme.io"} for i in range(500)]
    )
    rows = [{"email": "q3@acme.io"}, {"email": "p9@acme.io"}] + [
        {"email": f"r{i}@acme.io"} for i in range(600)
    ]
    await import_chunk(http, ws, importId=import_id, rows=rows, final=True)
    await merge_imports(ws)
    merged = await fetch(http, ws, import_id)
    assert counters(merged) == {k: 0 for k in COUNTERS} | {
        "rows": 2_106,
        "created": 1_999,  # 1,000 + 500 + the 499 that fit
        "skipped": 1,
        "duplicates": 4,  # p7, known (met in the first part), q3, p9
        "suppressed": 1,
        "overLimit": 101,
    }
    assert merged["status"] == "enriching"
    assert (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()["total"] == 2_000
    assert (await listing(http, ws, listId=merged["listId"]))["total"] == 2_000
    assert await emails(http, ws, search="r498@") == ["r498@acme.io"]
    assert await emails(http, ws, search="r499@") == []


async def test_stopping_the_import_worker_waits_for_its_statistics_refresh(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL refreshes the planner statistics a merge made due beside the next merge, in a task of its
    own; a worker that stops (SIGTERM) waits for that refresh instead of dropping it with the event loop, and
    raises what it raised, for the loop to log."""
    import asyncio

    from workers import imports
    from workers.registry import select

    ws = await make_workspace()
    if ws.runtime.is_sqlite:
        pytest.skip("SQLite refreshes its statistics inside the merge")
    await imports.stop(ws.runtime)  # whatever an earlier test's ticks left running
    refreshed: list[str] = []

    async def slow_refresh(ctx: Any, tables: set[str]) -> None:
        await asyncio.sleep(0.3)
        refreshed.append("done")

    monkeypatch.setattr(imports, "refresh_import_statistics", slow_refresh)
    await import_chunk(http, ws, rows=[{"email": f"s{i}@acme.io"} for i in range(20)], final=True)
    assert await imports.tick(ws.runtime) > 0
    assert refreshed == []  # running beside, not awaited by the tick
    [worker] = select(["import"])
    assert worker.on_stop is not None
    await worker.on_stop(ws.runtime)
    assert refreshed == ["done"]

    async def failing_refresh(ctx: Any, tables: set[str]) -> None:
        raise RuntimeError("statistics refresh failed")

    monkeypatch.setattr(imports, "refresh_import_statistics", failing_refresh)
    await import_chunk(http, ws, rows=[{"email": "late@acme.io"}], final=True)
    assert await imports.tick(ws.runtime) > 0
    with pytest.raises(RuntimeError, match="statistics refresh failed"):
        await worker.on_stop(ws.runtime)
    await merge_imports(ws)
