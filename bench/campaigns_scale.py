"""Campaigns at a million leads: adding every lead to a campaign, then reading it, against `outreach serve`.

Starts `outreach serve --no-workers` (database from OUTREACH_DATABASE_URL, default a fresh SQLite file),
creates a workspace, writes N leads and two mailboxes straight into the database (lead import has its own
benchmark, bench/leads_scale.py), then over HTTP: creates a campaign with a two-step sequence, adds every
lead with `allLeads` (timed: one set-based statement path), and measures `GET /campaigns/{id}`,
`GET /campaigns`, page 1, a deep page and searches of the campaign's leads, the preview, the launch
checklist and the launch (whose answer says when sending starts). The leads are written as the
search-index worker leaves them (`search_index` set).
Prints Markdown for docs/PERFORMANCE.md.

    .venv/bin/python bench/campaigns_scale.py [--leads 1000000] [--samples 30]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import httpx
from _seed import bench_lead
from _server import served
from leads_scale import percentile, timed

BATCH = 20_000


async def _write_rows(url: str, workspace_id: str, n: int) -> None:
    from outreach_core.kernel.db.engine import create_engine
    from outreach_core.kernel.db.maintenance import refresh_lead_statistics
    from outreach_core.kernel.db.tables import leads, mailboxes
    from outreach_core.kernel.ids import new_ids

    engine = create_engine(url)
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        await conn.execute(
            mailboxes.insert(),
            [
                {
                    "id": f"mbx_bench{i}",
                    "workspace_id": workspace_id,
                    "email": f"sender{i}@bench.test",
                    "domain": "bench.test",
                    "display_name": f"Sender {i}",
                    "provider": "smtp",
                    "ramp_started_on": "2026-01-01",
                    "smtp_host": "smtp.bench.test",
                    "smtp_port": 465,
                    "smtp_security": "tls",
                    "smtp_user": f"sender{i}@bench.test",
                    "imap_host": "imap.bench.test",
                    "imap_port": 993,
                    "imap_security": "tls",
                    "imap_user": f"sender{i}@bench.test",
                    "password_encrypted": "bench",
                    "created_at": now,
                }
                for i in range(2)
            ],
        )
    for first in range(0, n, BATCH):
        count = min(BATCH, n - first)
        ids = new_ids("lead", count)
        rows = []
        for k in range(count):
            i = first + k
            row = bench_lead(
                i,
                ids[k],
                workspace_id,
                now,
                custom={"industry": "software"} if i % 2 else {},
                verify_status="risky" if i % 50 == 0 else "valid",
                status="bounced" if i % 100 == 1 else "active",
            )
            # as the search-index worker leaves them, so a search reads the index
            rows.append({**row, "search_index": row["search_text"]})
        async with engine.begin() as conn:
            await conn.execute(leads.insert(), rows)
    async with engine.begin() as conn:
        await refresh_lead_statistics(conn)
    await engine.dispose()


async def _maintain(url: str) -> None:
    from outreach_core.kernel.db.engine import create_engine

    engine = create_engine(url)
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        if conn.dialect.name == "sqlite":
            await conn.exec_driver_sql("PRAGMA analysis_limit=2000")
            await conn.exec_driver_sql("ANALYZE campaign_leads")
        else:
            await conn.exec_driver_sql("VACUUM ANALYZE campaign_leads")
    await engine.dispose()


async def _all_waiting(url: str, campaign_id: str) -> None:
    """Every lead of the campaign contacted, its follow-up due in three days."""
    from datetime import timedelta

    from outreach_core.kernel.db.engine import create_engine
    from outreach_core.kernel.db.tables import campaign_leads

    engine = create_engine(url)
    async with engine.begin() as conn:
        await conn.execute(
            campaign_leads.update()
            .where(campaign_leads.c.campaign_id == campaign_id)
            .values(status="contacted", step=1, next_at=datetime.now(UTC) + timedelta(days=3))
        )
    await engine.dispose()
    await _maintain(url)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--leads", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    with (
        served(plan="agency") as server,
        httpx.Client(
            base_url=server.base, headers={"Authorization": f"Bearer {server.key}"}, timeout=1200
        ) as http,
    ):
        workspace_id = http.get("/api/v1/me").json()["workspace"]["id"]
        started = time.perf_counter()
        asyncio.run(_write_rows(server.env["OUTREACH_DATABASE_URL"], workspace_id, args.leads))
        print(f"\n{server.engine}: wrote {args.leads:,} leads in {time.perf_counter() - started:.1f} s\n")

        cid = http.post("/api/v1/campaigns", json={"name": "Bench"}).json()["id"]
        http.patch(
            f"/api/v1/campaigns/{cid}", json={"mailboxIds": ["mbx_bench0", "mbx_bench1"]}
        ).raise_for_status()
        sequence = {
            "steps": [
                {
                    "variants": [
                        {
                            "subject": "Hi {{first_name}}",
                            "body": "{Hi|Hello} {{industry|there}}. {{unsubscribe}}",
                        }
                    ]
                },
                {"waitDays": 3, "variants": [{"subject": "", "body": "Bump"}]},
            ]
        }
        http.put(f"/api/v1/campaigns/{cid}/sequence", json=sequence).raise_for_status()
        t0 = time.perf_counter()
        added = http.post(f"/api/v1/campaigns/{cid}/leads", json={"allLeads": True})
        add_s = time.perf_counter() - t0
        added.raise_for_status()
        print(f"add_leads_to_campaign allLeads: {add_s:.1f} s -> {added.json()}\n")
        # What autovacuum does within a minute or so of a bulk insert: fresh planner statistics (and, on
        # PostgreSQL, the visibility map that lets deep pages be read from the index alone).
        asyncio.run(_maintain(server.env["OUTREACH_DATABASE_URL"]))

        deepest = max(1, -(-args.leads // 200))
        rows: list[tuple[str, str, dict[str, Any]]] = [
            ("GET /campaigns/{id}", f"/api/v1/campaigns/{cid}", {}),
            ("GET /campaigns", "/api/v1/campaigns", {}),
            ("GET /campaigns/{id}/leads page 1", f"/api/v1/campaigns/{cid}/leads", {}),
            (
                "GET /campaigns/{id}/leads status=not_contacted",
                f"/api/v1/campaigns/{cid}/leads",
                {"status": "not_contacted"},
            ),
            (
                "GET /campaigns/{id}/leads search=first7 (11 % of the leads)",
                f"/api/v1/campaigns/{cid}/leads",
                {"search": "first7"},
            ),
            (
                "GET /campaigns/{id}/leads search=company 42 (2 %; every lead holds its trigrams)",
                f"/api/v1/campaigns/{cid}/leads",
                {"search": "company 42"},
            ),
            (
                "GET /campaigns/{id}/leads search=bench (every lead)",
                f"/api/v1/campaigns/{cid}/leads",
                {"search": "bench"},
            ),
            (
                "GET /campaigns/{id}/leads search=person123457@ (one lead)",
                f"/api/v1/campaigns/{cid}/leads",
                {"search": "person123457@"},
            ),
            (
                f"GET /campaigns/{{id}}/leads deepest page ({deepest:,} x 200)",
                f"/api/v1/campaigns/{cid}/leads",
                {"page": deepest, "pageSize": 200},
            ),
            ("GET /campaigns/{id}/preview", f"/api/v1/campaigns/{cid}/preview", {}),
        ]
        print("| request | p50 ms | p95 ms |")
        print("|---|---:|---:|")
        for name, path, params in rows:
            p50, p95, _ = timed(http, path, params, args.samples)
            print(f"| {name} | {p50:.1f} | {p95:.1f} |")
        checklist = []
        for _ in range(3):
            t0 = time.perf_counter()
            http.get(f"/api/v1/campaigns/{cid}/checklist").raise_for_status()
            checklist.append((time.perf_counter() - t0) * 1000)
        median, worst = percentile(checklist, 50), max(checklist)
        print(f"| GET /campaigns/{{id}}/checklist (3 runs, max) | {median:.1f} | {worst:.1f} |")

        # The launch answer says when sending starts (campaigns/next_send.py): with every lead due now, then
        # with none due (every lead waiting for its follow-up, the most the answer reads).
        for case in ("every lead due now", "every lead waiting for a follow-up"):
            if case != "every lead due now":
                asyncio.run(_all_waiting(server.env["OUTREACH_DATABASE_URL"], cid))
            t0 = time.perf_counter()
            launched = http.post(f"/api/v1/campaigns/{cid}/launch")
            launch_ms = (time.perf_counter() - t0) * 1000
            launched.raise_for_status()
            http.post(f"/api/v1/campaigns/{cid}/pause").raise_for_status()
            print(f"| POST /campaigns/{{id}}/launch, {case} | {launch_ms:.1f} | |")
            print(f"|   nextSendAt {launched.json()['nextSendAt']}: {launched.json()['message']} | | |")


if __name__ == "__main__":
    main()
