"""`GET /metrics` as Prometheus scrapes it: requests by route template and status with latency histograms,
worker ticks, lag and failures, sends by outcome, queue depths; a bearer token when one is configured."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import delete

from outreach_core.kernel.db import health
from outreach_core.kernel.db.tables import outbox
from outreach_core.kernel.ids import new_ids
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.mail_servers import SmtpServer, Users
from tests.ops.test_health import app_on, running
from tests.sending.helpers import add_lead, launched_campaign, received_by, smtp_mailbox
from workers import sender
from workers.health import record_sends, sends_by_outcome
from workers.loop import Worker


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text by (name, sorted labels); parsing it proves the format."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_requests_are_counted_by_route_template_and_status(
    runtime: Runtime, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    async with app_on(runtime) as client:
        for lead in ("ld_missing1", "ld_missing2", "ld_missing3"):
            assert (await client.get(f"/api/v1/leads/{lead}", headers=ws.headers)).status_code == 404
        assert (await client.get("/api/v1/leads", headers=ws.headers)).status_code == 200
        assert (await client.get("/api/v1/leads")).status_code == 401
        assert (await client.get("/no/such/page/ld_x")).status_code == 404
        # a method outside the common seven is counted as OTHER; an invented one never reaches the app:
        # uvicorn's HTTP parser (httptools) answers it 400 itself, so it cannot add a series either
        await client.request("PROPFIND", "/api/v1/leads/ld_x")
        assert (await client.request("BREW", "/api/v1/leads/ld_x")).status_code == 400
        answer = await client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    got = samples(answer.text)
    route = "/api/v1/leads/{id}"
    assert (
        got[("outreach_http_requests_total", (("method", "GET"), ("route", route), ("status", "404")))] == 3
    )
    assert (
        got[
            (
                "outreach_http_requests_total",
                (("method", "GET"), ("route", "/api/v1/leads"), ("status", "200")),
            )
        ]
        == 1
    )
    assert (
        got[
            (
                "outreach_http_requests_total",
                (("method", "GET"), ("route", "/api/v1/leads"), ("status", "401")),
            )
        ]
        == 1
    )
    assert (
        got[("outreach_http_requests_total", (("method", "GET"), ("route", "unmatched"), ("status", "404")))]
        == 1
    )
    assert got[("outreach_http_request_duration_seconds_count", (("method", "GET"), ("route", route)))] == 3
    assert (
        got[
            (
                "outreach_http_request_duration_seconds_bucket",
                (("le", "+Inf"), ("method", "GET"), ("route", route)),
            )
        ]
        == 3
    )
    assert not any("ld_missing" in str(key) or "BREW" in str(key) or "PROPFIND" in str(key) for key in got), (
        "ids and methods never become labels"
    )
    assert any(
        dict(labels).get("method") == "OTHER"
        for name, labels in got
        if name == "outreach_http_requests_total"
    )
    for queue in ("imports", "outbox", "webhooks"):
        assert ("outreach_queue_depth", (("queue", queue),)) in got
    assert ("process_cpu_seconds_total", ()) in got


async def test_worker_ticks_failures_lag_and_sends(runtime: Runtime) -> None:
    calls = 0

    async def tick(_: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("one bad batch")
        return 2 if calls == 1 else 0

    before = sends_by_outcome()
    record_sends({"sent": 3, "bounced": 1})  # what the sender worker reports after each batch
    async with app_on(runtime) as client, running(Worker("probe", tick, interval_s=0.05, max_backoff_s=0.1)):
        for _ in range(100):
            if calls >= 4:
                break
            await asyncio.sleep(0.02)
        got = samples((await client.get("/metrics")).text)
    ticks = got[("outreach_worker_ticks_total", (("worker", "probe"),))]
    assert ticks >= 4
    assert got[("outreach_worker_failures_total", (("worker", "probe"),))] == 1
    assert got[("outreach_worker_items_total", (("worker", "probe"),))] == 2
    assert 0 <= got[("outreach_worker_lag_seconds", (("worker", "probe"),))] < 5
    assert got[("outreach_sends_total", (("outcome", "sent"),))] == before.get("sent", 0) + 3
    assert got[("outreach_sends_total", (("outcome", "bounced"),))] == before.get("bounced", 0) + 1


async def test_queue_depths_count_what_waits(runtime: Runtime, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    async with app_on(runtime) as client:
        start = samples((await client.get("/metrics")).text)
        body = {"rows": [{"email": f"q{i}@example.com"} for i in range(3)], "final": True}
        answer = await client.post("/api/v1/leads/import", json=body, headers=ws.headers)
        assert answer.status_code in (200, 201, 202), answer.text
        after = samples((await client.get("/metrics")).text)
    key = ("outreach_queue_depth", (("queue", "imports"),))
    assert after[key] == start[key] + 1  # one received part waits for the import worker (none runs here)


async def test_a_queue_deeper_than_the_cap_reads_as_the_cap(
    runtime: Runtime, make_workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queues are counted up to `QUEUE_DEPTH_CAP` (an exact count of millions of rows took most of the
    scrape's timeout): three waiting events read as 2 under a cap of 2, and as 3 or more under the real
    one."""
    ws = await make_workspace()
    ids = new_ids("evt", 3)
    now = runtime.ports.clock.now()
    rows = [
        {"id": i, "workspace_id": ws.workspace_id, "kind": "lead.replied", "payload": {}, "created_at": now}
        for i in ids
    ]
    async with runtime.engine.begin() as conn:
        await conn.execute(outbox.insert(), rows)
    try:
        assert (await health.queue_depths(runtime.engine))["outbox"] >= 3
        monkeypatch.setattr(health, "QUEUE_DEPTH_CAP", 2)
        assert (await health.queue_depths(runtime.engine))["outbox"] == 2
    finally:
        async with runtime.engine.begin() as conn:
            await conn.execute(delete(outbox).where(outbox.c.id.in_(ids)))


async def test_the_token_guards_metrics_when_set(runtime: Runtime) -> None:
    settings = runtime.settings.model_copy(update={"metrics_token": "s3cret-scrape"})
    guarded = Runtime(settings, engine=runtime.engine, ports=runtime.ports)
    async with app_on(guarded) as client:
        missing = await client.get("/metrics")
        wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
        right = await client.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape"})
        health = await client.get("/healthz")
    assert missing.status_code == wrong.status_code == 401
    assert missing.json()["error"]["code"] == "unauthorized"
    assert missing.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200 and "outreach_http_requests_total" in right.text
    assert health.status_code == 200  # health and readiness stay open to probes


def test_metric_names_follow_prometheus_conventions() -> None:
    from outreach_app.ops.metrics import Metrics

    text = Metrics().render([], {"sent": 1}, {"imports": 0}).decode()
    names = {m.group(1) for m in re.finditer(r"^# TYPE (\S+)", text, re.M)}
    assert all(re.fullmatch(r"[a-z_]+", n) for n in names)
    assert {"outreach_http_requests_total", "outreach_sends_total", "outreach_queue_depth"} <= names


async def test_a_real_send_is_counted_by_outcome(
    runtime: Runtime,
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    smtp_servers: dict[str, SmtpServer],
    mail_users: Users,
) -> None:
    ws = await make_workspace()
    server = smtp_servers["starttls"]
    box = await smtp_mailbox(ws, server, mail_users)
    lead = await add_lead(ws, f"counted-{id(ws)}@lovelace.example", first_name="Ada")
    await launched_campaign(http, ws, [box], [lead])
    async with app_on(runtime) as client:
        before = samples((await client.get("/metrics")).text)
        assert await sender.tick(ws.runtime) >= 1
        after = samples((await client.get("/metrics")).text)
    assert received_by(server, f"counted-{id(ws)}@lovelace.example")  # the SMTP server has it
    key = ("outreach_sends_total", (("outcome", "sent"),))
    assert after[key] == before.get(key, 0) + 1
