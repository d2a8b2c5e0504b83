"""Delivery as the receiver sees it: signed bodies, retries on the schedule, auto-disable, redelivery, purge,
and every way an endpoint can fail recorded as a failed attempt that touches nothing else."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx

from outreach_core.kernel.ports import FixedClock
from tests.conftest import MakeWorkspace, free_port
from tests.webhooks.conftest import CreateHook, MakeRuntime, run_worker
from tests.webhooks.helpers import attempt_rows, deliveries, delivery_rows, hook, hook_row, new_lead, won
from tests.webhooks.receiver import Answer, ClosingServer, Endpoint, Received, Receiver, verify_signature
from workers import webhooks as worker


def _clock() -> FixedClock:
    return FixedClock(datetime.now(UTC))


async def test_an_event_arrives_signed_with_the_documented_body_and_headers(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = _clock()
    ep = receiver.endpoint(now=lambda: clock.now().timestamp())
    created = await create_hook(ws, ep.url, ["lead.won"], description="CRM")
    ep.secrets = [created["secret"]]
    assert created["secret"].startswith("whsec_") and len(created["secret"]) == 6 + 43
    lead = await new_lead(hook_http, ws, lastName="Lovelace")
    await won(hook_http, ws, lead["id"], value=1200.5)

    await run_worker(make_runtime(clock))

    [got] = receiver.at(ep)
    assert got.verified
    body = got.json
    assert got.headers["content-type"] == "application/json"
    assert got.headers["service-event-id"] == body["id"] and body["id"].startswith("evt_")
    assert got.headers["service-event-type"] == "lead.won"
    signature = got.headers["service-signature"]
    assert signature.startswith("t=") and signature.count("v1=") == 1
    assert list(body) == ["id", "type", "createdAt", "workspaceId", "test", "data"]
    assert body["type"] == "lead.won" and body["workspaceId"] == ws.workspace_id and body["test"] is False
    assert body["createdAt"].endswith("Z")
    assert body["data"] == {
        "lead": {
            "id": lead["id"],
            "email": lead["email"],
            "firstName": "Ada",
            "lastName": "Lovelace",
            "company": "Engines",
            "status": "won",
        },
        "campaign": None,
        "thread": None,
        "step": None,
        "variant": None,
        "value": 1200.5,
    }

    [delivery] = await deliveries(hook_http, ws, created["webhook"]["id"])
    assert delivery["status"] == "delivered" and delivery["attempts"] == 1
    assert delivery["eventId"] == body["id"] and delivery["payload"] == body
    assert [t["status"] for t in delivery["tries"]] == [200] and delivery["tries"][0]["error"] is None
    listed = await hook(hook_http, ws, created["webhook"]["id"])
    assert (listed["delivered"], listed["failed"], listed["pending"]) == (1, 0, 0)
    assert listed["lastStatus"] == 200 and listed["lastDeliveryAt"] is not None
    assert "secret" not in str(listed).lower()


async def test_only_subscribed_enabled_endpoints_of_the_workspace_get_an_event(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws, other = await make_workspace(), await make_workspace()
    wanted, unsubscribed, off, theirs = (receiver.endpoint() for _ in range(4))
    await create_hook(ws, wanted.url, ["lead.won", "lead.labeled"])
    await create_hook(ws, unsubscribed.url, ["campaign.paused"])
    turned_off = await create_hook(ws, off.url, ["lead.won"])
    await create_hook(other, theirs.url, ["lead.won"])
    patched = await hook_http.patch(
        f"/api/v1/webhooks/{turned_off['webhook']['id']}", headers=ws.headers, json={"enabled": False}
    )
    assert patched.json()["enabled"] is False and patched.json()["disabledReason"] is None
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])

    await run_worker(make_runtime(_clock()))

    assert len(receiver.at(wanted)) == 1
    assert receiver.at(unsubscribed) == receiver.at(off) == receiver.at(theirs) == []


async def test_failed_attempts_are_retried_on_the_schedule_then_the_delivery_fails(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    """Schedule 60,120,240 s (OUTREACH_WEBHOOK_RETRY_SCHEDULE): 4 attempts, each wait within +-20 %."""
    ws = await make_workspace()
    clock = _clock()
    ep = receiver.endpoint(Answer(500, b"database down"), now=lambda: clock.now().timestamp())
    created = await create_hook(ws, ep.url)
    ep.secrets = [created["secret"]]
    hook_id = created["webhook"]["id"]
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    rt = make_runtime(clock)

    await run_worker(rt)
    [row] = await delivery_rows(rt, hook_id)
    assert row.status == "pending" and row.attempts == 1 and row.last_error == "HTTP 500: database down"
    for expected in (60, 120, 240):
        due = row.next_attempt_at
        assert expected * 0.8 - 0.01 <= (due - clock.now()).total_seconds() <= expected * 1.2 + 0.01
        clock.set(due - timedelta(seconds=1))
        await run_worker(rt)
        assert (await delivery_rows(rt, hook_id))[0].attempts == row.attempts  # not before it is due
        clock.set(due)
        await run_worker(rt)
        [row] = await delivery_rows(rt, hook_id)
    assert row.status == "failed" and row.attempts == 4 and row.next_attempt_at is None
    got = receiver.at(ep)
    assert len(got) == 4 and all(r.verified for r in got) and len({r.event_id for r in got}) == 1
    clock.advance(days=1)
    await run_worker(rt)
    assert len(receiver.at(ep)) == 4  # never again

    [delivery] = await deliveries(hook_http, ws, hook_id)
    assert delivery["status"] == "failed" and delivery["attempts"] == 4
    assert [t["status"] for t in delivery["tries"]] == [500] * 4
    assert delivery["lastError"] == "HTTP 500: database down" and delivery["nextAttemptAt"] is None
    listed = await hook(hook_http, ws, hook_id)
    assert (listed["delivered"], listed["failed"], listed["pending"], listed["lastStatus"]) == (0, 1, 0, 500)
    assert listed["enabled"] is True  # 4 failures in 7 minutes are not 3 days


async def test_a_retry_that_succeeds_delivers_and_resets_the_streak(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = _clock()
    ep = receiver.endpoint(Answer(503), Answer(200))
    created = await create_hook(ws, ep.url)
    hook_id = created["webhook"]["id"]
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    rt = make_runtime(clock)
    await run_worker(rt)
    assert (await hook_row(rt, hook_id)).failed_attempts == 1
    clock.advance(seconds=75)
    await run_worker(rt)
    [row] = await delivery_rows(rt, hook_id)
    assert row.status == "delivered" and row.attempts == 2 and row.delivered_at == clock.now()
    endpoint = await hook_row(rt, hook_id)
    assert endpoint.failed_attempts == 0 and endpoint.failing_since is None and endpoint.last_status == 200


async def test_410_gone_turns_the_endpoint_off_at_once_and_fails_its_pending_deliveries(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    ep = receiver.endpoint(Answer(410, b"gone"))
    created = await create_hook(ws, ep.url)
    hook_id = created["webhook"]["id"]
    for _ in range(3):
        await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    rt = make_runtime(_clock(), webhook_concurrency_per_endpoint=1)

    await run_worker(rt)

    # one POST at a time: the first 410 turns it off before the others are sent
    assert len(receiver.at(ep)) <= 2
    listed = await hook(hook_http, ws, hook_id)
    assert listed["enabled"] is False and "410 Gone" in listed["disabledReason"]
    rows = await delivery_rows(rt, hook_id)
    assert {r.status for r in rows} == {"failed"}
    assert any("turned off" in (r.last_error or "") for r in rows)
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    await run_worker(rt)
    assert len(await delivery_rows(rt, hook_id)) == 3  # no delivery is made while it is off

    back = await hook_http.patch(f"/api/v1/webhooks/{hook_id}", headers=ws.headers, json={"enabled": True})
    assert back.json()["enabled"] is True and back.json()["disabledReason"] is None


async def test_an_endpoint_failing_every_attempt_for_3_days_and_20_attempts_is_turned_off(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = _clock()
    ep = receiver.endpoint(Answer(500))
    created = await create_hook(ws, ep.url)
    hook_id = created["webhook"]["id"]
    rt = make_runtime(clock, webhook_retry_schedule="")  # one attempt per event: the streak is per endpoint
    for hour in range(0, 73, 4):  # 19 events over 72 hours: long enough, not yet 20 attempts
        await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
        await run_worker(rt)
        if hour < 72:
            clock.advance(hours=4)
    endpoint = await hook_row(rt, hook_id)
    assert endpoint.failed_attempts == 19 and endpoint.enabled
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    await run_worker(rt)
    listed = await hook(hook_http, ws, hook_id)
    assert listed["enabled"] is False
    assert listed["disabledReason"].startswith(
        "Every delivery attempt failed for more than 3 days (20 attempts"
    )
    assert len(receiver.at(ep)) == 20


async def test_redelivery_queues_a_failed_delivery_with_a_fresh_round_of_retries(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = _clock()
    ep = receiver.endpoint(Answer(500), Answer(500), Answer(200))
    created = await create_hook(ws, ep.url)
    hook_id = created["webhook"]["id"]
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    rt = make_runtime(clock, webhook_retry_schedule="60")
    await run_worker(rt)
    clock.advance(seconds=80)
    await run_worker(rt)
    [failed] = await deliveries(hook_http, ws, hook_id)
    assert failed["status"] == "failed" and failed["attempts"] == 2

    url = f"/api/v1/webhooks/deliveries/{failed['id']}/redeliver"
    assert (await hook_http.post(url, headers=ws.headers)).json() == {"ok": True}
    again = await hook_http.post(url, headers=ws.headers)
    assert again.status_code == 409 and again.json()["error"]["code"] == "invalid_state"
    await run_worker(rt)
    [done] = await deliveries(hook_http, ws, hook_id)
    assert done["status"] == "delivered" and done["attempts"] == 3 and done["eventId"] == failed["eventId"]
    assert [t["status"] for t in done["tries"]] == [500, 500, 200]
    got = receiver.at(ep)
    assert len(got) == 3 and len({r.event_id for r in got}) == 1

    # a delivered one can be sent again too; a turned-off endpoint's cannot
    assert (await hook_http.post(url, headers=ws.headers)).status_code == 200
    await run_worker(rt)
    assert len(receiver.at(ep)) == 4
    await hook_http.patch(f"/api/v1/webhooks/{hook_id}", headers=ws.headers, json={"enabled": False})
    refused = await hook_http.post(url, headers=ws.headers)
    assert refused.status_code == 409 and "turn it on" in refused.json()["error"]["message"]
    missing = await hook_http.post("/api/v1/webhooks/deliveries/whd_missing/redeliver", headers=ws.headers)
    assert missing.status_code == 404


async def test_deliveries_older_than_30_days_are_purged_with_their_attempts(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = _clock()
    ep = receiver.endpoint()
    created = await create_hook(ws, ep.url)
    hook_id = created["webhook"]["id"]
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    rt = make_runtime(clock)
    await run_worker(rt)
    [old] = await delivery_rows(rt, hook_id)
    assert len(await attempt_rows(rt, old.id)) == 1

    clock.advance(days=29)
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    await run_worker(rt)
    clock.advance(days=1, seconds=1)
    worker.pipeline(rt).next_purge = 0.0  # the purge runs once a minute of real time
    await run_worker(rt)

    rows = await delivery_rows(rt, hook_id)
    assert [r.id for r in rows] != [] and old.id not in {r.id for r in rows} and len(rows) == 1
    assert await attempt_rows(rt, old.id) == []
    assert len(await deliveries(hook_http, ws, hook_id)) <= 1


async def test_a_slow_endpoint_does_not_hold_up_a_fast_one(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    """Per-endpoint concurrency 2: the slow endpoint holds two POSTs (and at most four deliveries) while every
    event reaches the fast one at once; the slow one's POSTs time out and are recorded."""
    ws = await make_workspace()
    slow, fast = receiver.endpoint(Answer(delay_s=5)), receiver.endpoint()
    slow_hook = await create_hook(ws, slow.url)
    await create_hook(ws, fast.url)
    for _ in range(10):
        await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    rt = make_runtime(_clock(), webhook_concurrency_per_endpoint=2, webhook_timeout_s=1.0)

    for _ in range(40):
        await worker.tick(rt)
        if len(receiver.at(fast)) == 10:
            break
    assert len(receiver.at(fast)) == 10
    assert len(receiver.at(slow)) == 2  # only its own slots
    # Every event reached the fast endpoint before the slow one's first POSTs timed out (1 s): held up
    # behind them, it would get the rest of its events only after that. Counted from the slow endpoint's
    # first POST, not from before the first tick, whose claims a loaded machine slows (1.52 s once in CI).
    first_slow = min(r.at for r in receiver.at(slow))
    last_fast = max(r.at for r in receiver.at(fast))
    assert last_fast - first_slow < 1.0, last_fast - first_slow
    await worker.drain(rt)
    rows = await delivery_rows(rt, slow_hook["webhook"]["id"])
    timed_out = [r for r in rows if r.attempts == 1]
    assert len(timed_out) >= 2 and all(r.last_error == "timed out" and r.last_status == 0 for r in timed_out)
    assert sum(1 for r in rows if r.claimed_until is not None and r.attempts == 0) <= 2


async def test_every_way_an_endpoint_fails_is_a_recorded_failed_attempt(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
    untrusted_receiver: Receiver,
    closing_server: ClosingServer,
) -> None:
    ws = await make_workspace()
    slow = receiver.endpoint(Answer(delay_s=3))
    huge = receiver.endpoint(Answer(200, huge_mb=64))
    redirect = receiver.endpoint(Answer(302, location="https://elsewhere.example/"))
    untrusted = untrusted_receiver.endpoint()
    targets = {
        "slow": slow.url,
        "huge": huge.url,
        "redirect": redirect.url,
        "tls": untrusted.url,
        "closed": closing_server.url,
        "refused": f"http://127.0.0.1:{_closed_port()}/hook",
        "unknown": "https://no-such-host.invalid/hook",
    }
    hooks = {name: (await create_hook(ws, url))["webhook"]["id"] for name, url in targets.items()}
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    rt = make_runtime(_clock(), webhook_timeout_s=1.0)

    started = time.monotonic()
    await run_worker(rt)
    assert time.monotonic() - started < 6

    errors = {}
    for name, hook_id in hooks.items():
        [row] = await delivery_rows(rt, hook_id)
        errors[name] = (row.status, row.last_status, row.last_error)
    assert errors["slow"] == ("pending", 0, "timed out")
    assert errors["huge"] == ("delivered", 200, None)  # a 2xx is delivered; only 16 KiB of it was read
    assert (
        errors["redirect"][:2] == ("pending", 302) and "redirects are not followed" in errors["redirect"][2]
    )
    assert errors["tls"][:2] == ("pending", 0) and errors["tls"][2].startswith("TLS certificate not trusted")
    assert errors["closed"] == ("pending", 0, "connection closed before an answer")
    assert errors["refused"] == ("pending", 0, "connection failed")
    assert errors["unknown"][:2] == ("pending", 0) and "no-such-host.invalid" in errors["unknown"][2]
    assert receiver.at(redirect) and not [
        r for r in receiver.received if "elsewhere" in r.headers.get("host", "")
    ]


async def test_a_private_address_is_refused_at_delivery_when_private_urls_are_not_allowed(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    """Saved while the server allowed private URLs; the worker of a server that does not refuses to connect
    (checked on the address it would connect to) and records why."""
    ws = await make_workspace()
    ep = receiver.endpoint()
    created = await create_hook(ws, ep.url)
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    await run_worker(make_runtime(_clock(), allow_private_urls=False))
    [row] = await delivery_rows(make_runtime(), created["webhook"]["id"])
    assert row.status == "pending" and row.last_status == 0
    assert "OUTREACH_ALLOW_PRIVATE_URLS=1" in row.last_error
    assert receiver.at(ep) == []


async def test_the_tls_endpoint_trusted_through_the_ca_file_gets_the_event(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    tls_receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = _clock()
    ep = tls_receiver.endpoint(now=lambda: clock.now().timestamp())
    assert ep.url.startswith("https://")
    created = await create_hook(ws, ep.url)
    ep.secrets = [created["secret"]]
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    await run_worker(make_runtime(clock))
    [got] = tls_receiver.at(ep)
    assert got.verified and got.json["type"] == "lead.won"


async def test_rotating_the_secret_signs_with_both_for_24_hours(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    clock = _clock()
    ep = receiver.endpoint(now=lambda: clock.now().timestamp())
    created = await create_hook(ws, ep.url)
    hook_id, old = created["webhook"]["id"], created["secret"]
    rotated = await hook_http.post(f"/api/v1/webhooks/{hook_id}/rotate-secret", headers=ws.headers)
    assert rotated.status_code == 200
    new = rotated.json()["secret"]
    assert new.startswith("whsec_") and new != old
    until = datetime.fromisoformat(rotated.json()["previousValidUntil"].replace("Z", "+00:00"))
    assert timedelta(hours=23, minutes=59) < until - datetime.now(UTC) <= timedelta(hours=24)
    rt = make_runtime(clock)

    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    await run_worker(rt)
    [during] = receiver.at(ep)
    assert during.headers["service-signature"].count("v1=") == 2
    for secret in (old, new):  # a receiver that knows either secret accepts it
        ep.secrets = [secret]
        assert _verifies(ep, during)

    clock.set(until + timedelta(seconds=1))
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    await run_worker(rt)
    after = receiver.at(ep)[1]
    assert after.headers["service-signature"].count("v1=") == 1
    ep.secrets = [old]
    assert not _verifies(ep, after)
    ep.secrets = [new]
    assert _verifies(ep, after)


def _verifies(ep: Endpoint, got: Received) -> bool:
    """The documented snippet's verdict on `got` with the endpoint's first secret."""
    now = ep.now() if ep.now is not None else None
    return verify_signature(ep.secrets[0], got.headers["service-signature"], got.body, now=now)


def _closed_port() -> int:
    """A port nothing listens on (connection refused)."""
    return free_port()
