"""Import at scale: plans that do not depend on statistics, statistics kept by the code, and lead counters
that stay exact while an import, enrichment, verification and deletions run at once."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event, func, select, text

from outreach_core.kernel.db.tables import leads
from tests.conftest import PG_URL, MakeWorkspace, WorkspaceHandle
from tests.leads.helpers import import_chunk, imported, merge_imports

pg_only = pytest.mark.skipif(not PG_URL, reason="PostgreSQL planner and statistics")


async def _list_total(http: httpx.AsyncClient, ws: WorkspaceHandle, list_id: str) -> int:
    page = await http.get("/api/v1/leads", headers=ws.headers, params={"listId": list_id})
    assert page.status_code == 200, page.text
    return int(page.json()["total"])


@pg_only
async def test_list_merge_plan_does_not_scan_list_leads_per_lead(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """An import into a list, with leads already in the workspace (`existing: skip`) and new ones: every
    statement the merge runs on `list_leads`, planned with no statistics on it at all, skips leads already
    on the list by its primary key (`ON CONFLICT DO NOTHING`) and scans neither `list_leads` nor `leads`."""
    ws = await make_workspace()
    first = await imported(http, ws, rows=[{"email": f"old{i}@acme.io"} for i in range(300)], final=True)
    assert first["created"] == 300
    lst = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": "Scale"})).json()

    statements: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if "list_leads" in statement and statement.lstrip().upper().startswith("INSERT"):
            statements.append((statement, parameters))

    engine = ws.runtime.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        rows = [{"email": f"old{i}@acme.io"} for i in range(300)] + [
            {"email": f"new{i}@acme.io"} for i in range(200)
        ]
        sent = await import_chunk(http, ws, rows=rows, list={"id": lst["id"]}, existing="skip", final=True)
        assert sent.status_code == 200, sent.text
        await merge_imports(ws)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    merged = (await http.get(f"/api/v1/leads/imports/{sent.json()['id']}", headers=ws.headers)).json()
    assert (merged["created"], merged["skipped"]) == (200, 300)
    assert await _list_total(http, ws, lst["id"]) == 500

    assert statements, "the existing leads are put on the list by an INSERT ... SELECT"
    async with ws.runtime.engine.connect() as conn:
        # no statistics, and a size the planner takes as unknown: what a never-analysed table looks like
        await conn.exec_driver_sql("DELETE FROM pg_statistic WHERE starelid = 'list_leads'::regclass")
        await conn.exec_driver_sql("UPDATE pg_class SET reltuples = -1 WHERE oid = 'list_leads'::regclass")
        for statement, parameters in statements:
            plan = "\n".join(
                r[0] for r in (await conn.exec_driver_sql("EXPLAIN " + statement, parameters)).all()
            )
            assert "Conflict Resolution: NOTHING" in plan, plan
            assert not re.search(r"Scan[^\n]* on (list_leads|leads)\b", plan), plan
        await conn.rollback()


@pg_only
async def test_an_import_keeps_the_statistics_of_the_tables_it_grows(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """After an import grew `list_leads` by more than half its analysed size, the merge's statistics
    upkeep analyses it (the statistics system reports the change within about a second), and not again
    until it grows again."""
    from outreach_core.kernel.db.maintenance import refresh_grown_statistics

    ws = await make_workspace(plan="agency")  # room for as many leads as earlier tests left on lists
    lst = (await http.post("/api/v1/lists", headers=ws.headers, json={"name": "Grown"})).json()
    async with ws.runtime.engine.begin() as conn:
        size = (await conn.exec_driver_sql("SELECT count(*) FROM list_leads")).scalar_one()
        await conn.exec_driver_sql("ANALYZE list_leads")

    async def analyses() -> Any:
        async with ws.runtime.engine.connect() as conn:
            query = "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'list_leads'"
            return (await conn.exec_driver_sql(query)).scalar_one()

    await asyncio.sleep(1.2)  # the statistics system has seen that ANALYZE
    before = await analyses()
    rows = [{"email": f"g{i}@acme.io"} for i in range(max(2_500, size))]
    for start in range(0, len(rows), 5_000):
        await import_chunk(http, ws, rows=rows[start : start + 5_000], list={"id": lst["id"]}, final=True)
    await merge_imports(ws)
    assert await _list_total(http, ws, lst["id"]) == len(rows)

    async def analysed_now() -> list[str]:
        async with ws.runtime.engine.begin() as conn:
            return await refresh_grown_statistics(conn, ["list_leads"])

    for _ in range(50):  # the merge may already have done it, once the counts were reported
        if await analyses() != before or await analysed_now() == ["list_leads"]:
            break
        await asyncio.sleep(0.1)
    assert await analyses() != before
    await asyncio.sleep(1.2)
    assert await analysed_now() == []


# --- counters stay exact ----------------------------------------------------------------------------------


async def _counted_by_scan(ws: WorkspaceHandle) -> dict[str, dict[str, int]]:
    async with ws.runtime.engine.connect() as conn:
        rows = (
            await conn.execute(
                select(leads.c.status, leads.c.verify_status, leads.c.esp, func.count())
                .where(leads.c.workspace_id == ws.workspace_id)
                .group_by(leads.c.status, leads.c.verify_status, leads.c.esp)
            )
        ).all()
    out: dict[str, dict[str, int]] = {"status": {}, "verify": {}, "esp": {}}
    for status, verify, esp, n in rows:
        for name, key in (("status", status), ("verify", verify), ("esp", esp)):
            out[name][key] = out[name].get(key, 0) + n
    return out


async def _counted_by_stats(http: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, dict[str, int]]:
    stats = (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()
    return {name: {k: v for k, v in stats[name].items() if v} for name in ("status", "verify", "esp")}


DOMAINS = ["gmail.com", "outlook.com", "acme-scale.test", "nomail-scale.test"]
scenarios = st.fixed_dictionaries(
    {
        "before": st.integers(0, 40),
        "chunks": st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=3),
        "existing": st.sampled_from(["skip", "update"]),
        "verify": st.booleans(),
        "deletes": st.integers(0, 5),
        "verify_before": st.booleans(),
    }
)


def _row(i: int, tag: str) -> dict[str, Any]:
    return {"email": f"{tag}{i}@{DOMAINS[i % len(DOMAINS)]}", "company": f"Co {tag}"}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
async def test_counters_stay_exact_under_concurrent_import_enrichment_and_verification(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: Any, scenario: dict[str, Any]
) -> None:
    """Leads in a workspace (some being verified), then an import of new and known addresses merged while
    enrichment, verification and deletions run at the same time (PostgreSQL: on separate connections):
    the stats (the counters, with the deltas not folded yet) equal a count of the leads, before and after
    the workers fold the deltas."""
    from outreach_core.enrichment.pipeline import enrich_pending
    from outreach_core.targets.lead_counts import fold_lead_counters
    from workers import imports, verify

    dns_server.add("acme-scale.test", "MX", "10 mx.acme-scale.test.")
    ws = await make_workspace(plan="agency")
    rt = ws.runtime
    before = [_row(i, "k") for i in range(scenario["before"])]
    if before:
        await imported(http, ws, rows=before, final=True)
    known = (await http.get("/api/v1/leads", headers=ws.headers, params={"pageSize": 200})).json()["leads"]
    if scenario["verify_before"] and known:
        ids = [lead["id"] for lead in known]
        queued = await http.post("/api/v1/leads/verify", headers=ws.headers, json={"target": {"ids": ids}})
        assert queued.status_code == 200, queued.text

    import_id: str | None = None
    chunks = scenario["chunks"]
    for n, (fresh, again) in enumerate(chunks):
        rows = [_row(i, f"n{n}-") for i in range(fresh)] + before[:again]
        body: dict[str, Any] = {"rows": rows, "existing": scenario["existing"], "verify": scenario["verify"]}
        body |= {"final": n == len(chunks) - 1}
        if import_id is not None:
            body["importId"] = import_id
        sent = await import_chunk(http, ws, **body)
        assert sent.status_code == 200, sent.text
        import_id = sent.json()["id"]

    async def delete_some() -> None:
        ids = [lead["id"] for lead in known[: scenario["deletes"]]]
        if ids:
            target = {"target": {"ids": ids}}
            deleted = await http.post("/api/v1/leads/delete", headers=ws.headers, json=target)
            assert deleted.status_code == 200, deleted.text

    async def enrich() -> None:
        await rt.system(enrich_pending, workspace_id=ws.workspace_id)

    async def merge_all() -> None:
        while await imports.tick(rt):
            pass

    await asyncio.gather(merge_all(), enrich(), verify.tick(rt), delete_some(), enrich(), verify.tick(rt))
    assert await _counted_by_stats(http, ws) == await _counted_by_scan(ws)
    await rt.system(fold_lead_counters)
    assert await _counted_by_stats(http, ws) == await _counted_by_scan(ws)
    if PG_URL:
        async with rt.engine.connect() as conn:
            pending = text("SELECT count(*) FROM lead_counter_deltas WHERE workspace_id = :ws")
            assert (await conn.execute(pending, {"ws": ws.workspace_id})).scalar_one() == 0
