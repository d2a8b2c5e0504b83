"""`list_threads` at 100,000 threads: page 1 of every filter, against `outreach serve`.

Starts `outreach serve --no-workers` (database from OUTREACH_DATABASE_URL, default a fresh SQLite file),
creates a workspace with a campaign and five labels over HTTP, writes 10,000 leads, two mailboxes and N
threads straight into the database (the inbox pipeline writes them in production; its speed has its own
benchmark), refreshes the planner statistics (what autovacuum does after a bulk insert), then times
`GET /threads` with each filter and `GET /threads/{id}`. Prints Markdown for docs/PERFORMANCE.md.

Threads: lead `i % 10,000`, mailbox `i % 2`, half in the campaign, a third labelled (five labels), kinds
70 % reply, 10 % out_of_office, 10 % auto_reply, 5 % bounce, 5 % unsubscribe_request; 30 % unread; last
messages spread over 90 days.

    .venv/bin/python bench/threads_list.py [--threads 100000] [--samples 30]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from _seed import bench_lead
from _server import served
from leads_scale import timed

LEADS = 10_000
Q = "/api/v1/threads"
BATCH = 20_000
KINDS = ["reply"] * 14 + ["out_of_office"] * 2 + ["auto_reply"] * 2 + ["bounce", "unsubscribe_request"]


async def _write_rows(url: str, workspace_id: str, n: int, campaign_id: str, labels: list[str]) -> str:
    from outreach_core.kernel.db.engine import create_engine
    from outreach_core.kernel.db.tables import leads, mailboxes, threads
    from outreach_core.kernel.ids import new_ids

    engine = create_engine(url)
    now = datetime.now(UTC)
    lead_ids = new_ids("lead", LEADS)
    async with engine.begin() as conn:
        await conn.execute(
            mailboxes.insert(),
            [
                {
                    "id": f"mbx_bench{i}_{workspace_id[-8:]}",
                    "workspace_id": workspace_id,
                    "email": f"sender{i}@bench.test",
                    "domain": "bench.test",
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
        await conn.execute(
            leads.insert(), [bench_lead(i, lead_ids[i], workspace_id, now) for i in range(LEADS)]
        )
    for first in range(0, n, BATCH):
        count = min(BATCH, n - first)
        ids = new_ids("thr", count)
        rows: list[dict[str, Any]] = []
        for k in range(count):
            i = first + k
            lead = i % LEADS
            subject = f"Re: Question {i % 997} for Company {lead % 5000}"
            rows.append(
                {
                    "id": ids[k],
                    "workspace_id": workspace_id,
                    "conversation": f"{lead_ids[lead]}:{i}",
                    "lead_id": lead_ids[lead],
                    "campaign_id": campaign_id if i % 2 == 0 else None,
                    "mailbox_id": f"mbx_bench{i % 2}_{workspace_id[-8:]}",
                    "subject": subject,
                    "kind": KINDS[i % len(KINDS)],
                    "label_id": labels[(i // 3) % len(labels)] if i % 3 == 0 else None,
                    "label_source": "rules" if i % 3 == 0 else None,
                    "last_message_at": now - timedelta(seconds=(i * 7919) % (90 * 86400)),
                    "unread": i % 10 < 3,
                    "message_count": 1 + i % 4,
                    "search_text": f"person{lead}@company{lead % 5000}.example first{lead % 100} bench "
                    + subject.lower(),
                    "created_at": now,
                }
            )
        async with engine.begin() as conn:
            await conn.execute(threads.insert(), rows)
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        if conn.dialect.name == "sqlite":
            await conn.exec_driver_sql("PRAGMA analysis_limit=2000")
            await conn.exec_driver_sql("ANALYZE threads")
        else:
            await conn.exec_driver_sql("VACUUM ANALYZE threads")
    await engine.dispose()
    return lead_ids[4242]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    with (
        served(plan="agency") as server,
        httpx.Client(
            base_url=server.base, headers={"Authorization": f"Bearer {server.key}"}, timeout=600
        ) as http,
    ):
        workspace_id = http.get("/api/v1/me").json()["workspace"]["id"]
        cid = http.post("/api/v1/campaigns", json={"name": "Bench"}).json()["id"]
        labels = [http.post("/api/v1/labels", json={"name": f"Label {i}"}).json()["id"] for i in range(5)]
        started = time.perf_counter()
        url = server.env["OUTREACH_DATABASE_URL"]
        lead = asyncio.run(_write_rows(url, workspace_id, args.threads, cid, labels))
        took = time.perf_counter() - started
        print(f"\n{server.engine}: wrote {args.threads:,} threads in {took:.1f} s\n")
        some_thread = http.get("/api/v1/threads").json()["threads"][0]["id"]
        cases: list[tuple[str, str, dict[str, Any]]] = [
            ("no filter", Q, {}),
            ("labelId (one of five labels)", Q, {"labelId": labels[2]}),
            ("labelId=none", Q, {"labelId": "none"}),
            ("campaignId", Q, {"campaignId": cid}),
            ("mailboxId", Q, {"mailboxId": f"mbx_bench1_{workspace_id[-8:]}"}),
            ("leadId", Q, {"leadId": lead}),
            ("kind=bounce", Q, {"kind": "bounce"}),
            ("kind=out_of_office&kind=auto_reply", Q, {"kind": ["out_of_office", "auto_reply"]}),
            ("unread=true", Q, {"unread": "true"}),
            ("unread&labelId&campaignId", Q, {"unread": "true", "labelId": labels[0], "campaignId": cid}),
            ("search=person4242@ (one lead)", Q, {"search": "person4242@"}),
            ("search=question 42 (subject)", Q, {"search": "question 42"}),
            ("search=bench (every thread)", Q, {"search": "bench"}),
            ("deep page (page 500 x 200)", Q, {"page": 500, "pageSize": 200}),
            ("GET /threads/{id}", f"/api/v1/threads/{some_thread}", {}),
        ]  # fmt: skip
        print("| GET /threads | total | p50 ms | p95 ms |")
        print("|---|---:|---:|---:|")
        for name, path, params in cases:
            p50, p95, total = timed(http, path, params, args.samples)
            total = total if path == Q else ""
            print(f"| {name} | {total} | {p50:.1f} | {p95:.1f} |")


if __name__ == "__main__":
    main()
