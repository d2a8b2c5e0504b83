"""The lead counters stay equal to a count of the leads through imports (SQLite counts an import's new
leads in its merge, one grouped upsert per part, migration 0034), single leads, updates, deletes and
enrichment."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import text

from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.enrichment.helpers import unique_domain
from tests.leads.helpers import create, imported, listing, suppress


async def counted(http: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[tuple[str, str, str], int]:
    """The counters as `GET /leads/stats` shows them, by key, checked against its totals."""
    stats = (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()
    async with ws.runtime.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT status, verify_status, esp, count(*) FROM leads WHERE workspace_id = :ws "
                    "GROUP BY status, verify_status, esp"
                ),
                {"ws": ws.workspace_id},
            )
        ).all()
    truth = {(r[0], r[1], r[2]): int(r[3]) for r in rows}
    for axis, position in (("status", 0), ("verify", 1), ("esp", 2)):
        by_value: dict[str, int] = {}
        for key, n in truth.items():
            by_value[key[position]] = by_value.get(key[position], 0) + n
        assert {k: v for k, v in stats[axis].items() if v} == by_value, axis
    assert stats["total"] == sum(truth.values()) == (await listing(http, ws))["total"]
    return truth


async def test_counters_equal_a_count_after_imports_updates_and_deletes(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_runtime: Any, dns_server: Any
) -> None:
    from outreach_core.enrichment.pipeline import enrich_pending

    ws = await make_workspace(plan="starter")  # 2,000 contacts
    # a domain of its own: the cache is shared, and a worker of another test may have looked up a common one
    domain = unique_domain("counters")
    await create(http, ws, f"known@{domain}", company="Old Co")
    await suppress(http, ws, f"blocked@{domain}")
    assert await counted(http, ws) == {("active", "unknown", "unknown"): 1}

    rows = [
        *({"email": f"m{i}@gmail.com"} for i in range(30)),  # a consumer provider: stored enriched
        *({"email": f"c{i}@{domain}"} for i in range(40)),
        {"email": f"C0@{domain}"},  # duplicate within the part
        {"email": "not-an-address"},
        {"email": f"blocked@{domain}"},  # suppressed
        {"email": f"known@{domain}", "title": "CEO"},  # known: updated
    ]
    first = await imported(http, ws, rows=rows, existing="update", list={"name": "Conf"})
    assert (first["created"], first["updated"], first["duplicates"], first["suppressed"]) == (70, 1, 1, 1)
    assert await counted(http, ws) == {
        ("active", "unknown", "unknown"): 41,
        ("active", "unknown", "google"): 30,
    }

    # a second part of the same import, the addresses met again plus new ones, with verification
    again = [{"email": f"c{i}@{domain}"} for i in range(50)] + [
        {"email": f"v{i}@yahoo.com"} for i in range(5)
    ]
    second = await imported(http, ws, importId=first["id"], rows=again, final=True)
    assert second["created"] == 70 + 15 and second["duplicates"] == 1 + 40
    verified = await imported(http, ws, rows=[{"email": f"w{i}@{domain}"} for i in range(3)], verify=True)
    assert verified["created"] == 3
    assert await counted(http, ws) == {
        ("active", "unknown", "unknown"): 51,
        ("active", "unknown", "google"): 30,
        ("active", "unknown", "yahoo"): 5,
        ("active", "verifying", "unknown"): 3,
    }

    # over the contacts limit: what fits is stored and counted, the rest is not
    room = 2000 - 89
    over = await imported(http, ws, rows=[{"email": f"o{i}@{domain}"} for i in range(room + 25)], final=True)
    assert (over["created"], over["overLimit"]) == (room, 25)
    assert sum((await counted(http, ws)).values()) == 2000

    # single leads changed and deleted; enrichment moving leads between providers
    lead = (await listing(http, ws, search=f"c1@{domain}"))["leads"][0]
    patched = await http.patch(f"/api/v1/leads/{lead['id']}", headers=ws.headers, json={"status": "won"})
    assert patched.status_code == 200, patched.text
    ids = [lead["id"] for lead in (await listing(http, ws, search="gmail.com", pageSize=11))["leads"]]
    gone = await http.post("/api/v1/leads/delete", headers=ws.headers, json={"target": {"ids": ids}})
    assert gone.json()["deleted"] == 11
    dns_server.add(domain, "MX", "10 aspmx.l.google.com.")
    while await dns_runtime.system(enrich_pending, workspace_id=ws.workspace_id):
        pass
    truth = await counted(http, ws)
    assert sum(truth.values()) == 2000 - 11 and truth[("won", "unknown", "google")] == 1
    assert truth[("active", "unknown", "google")] == 2000 - 11 - 1 - 5 - 3
    assert truth[("active", "verifying", "google")] == 3
