"""A real `outreach worker --only webhooks` process: killed with SIGKILL between the POST and its record, the
event is POSTed again by the next worker once the lease ends (at least once, never zero times); stopped
with SIGTERM mid-POST, it waits for the answer and records it (sent once)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from outreach_core.kernel.settings import Settings
from tests.conftest import MakeWorkspace
from tests.webhooks.conftest import CreateHook
from tests.webhooks.helpers import delivery_rows, new_lead, won
from tests.webhooks.receiver import Answer, Receiver

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 3.0  # the lease is 2 x 3 + 5 = 11 s


def _start(settings: Settings) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTREACH_")}
    env.update(
        OUTREACH_DATABASE_URL=settings.database_url,
        OUTREACH_SECRET_KEY=settings.secret_key or "",
        OUTREACH_TLS_CA_FILE=settings.tls_ca_file or "",
        OUTREACH_ALLOW_PRIVATE_URLS="1",
        OUTREACH_WEBHOOK_TIMEOUT_S=str(TIMEOUT_S),
        OUTREACH_LOG_JSON="0",
        OUTREACH_LOG_LEVEL="WARNING",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "outreach_app.cli", "worker", "--only", "webhooks"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _stop(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode, process.stderr.read().decode(errors="replace") if process.stderr else ""


async def _until(check: Any, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.2)


async def test_a_worker_killed_between_the_post_and_its_record_loses_nothing(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    receiver: Receiver,
    hook_runtime: Any,
    settings: Settings,
) -> None:
    ws = await make_workspace()
    ep = receiver.endpoint(Answer(delay_s=20), Answer(200, b"thanks"))
    created = await create_hook(ws, ep.url)
    ep.secrets = [created["secret"]]
    hook_id = created["webhook"]["id"]
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])

    first = _start(settings)
    try:
        [arrived] = await receiver.wait_for(ep, 1, timeout_s=30)
    finally:
        first.kill()  # SIGKILL while the endpoint is still answering: nothing recorded
        first.wait()
    killed_at = time.monotonic()
    [row] = await delivery_rows(hook_runtime, hook_id)
    assert row.status == "pending" and row.attempts == 0 and row.claimed_until is not None

    second = _start(settings)
    try:
        got = await receiver.wait_for(ep, 2, timeout_s=40)

        async def delivered() -> Any:
            [row] = await delivery_rows(hook_runtime, hook_id)
            return row if row.status == "delivered" else None

        row = await _until(delivered, 20)
    finally:
        code, logs = await asyncio.to_thread(_stop, second)
    assert code == 0, logs
    # POSTed again only once the lease of the killed worker ended (11 s after its claim)
    assert got[1].at - arrived.at >= 2 * TIMEOUT_S + 5 - 1 and time.monotonic() - killed_at < 40
    assert [r.event_id for r in got] == [arrived.event_id] * 2 and all(r.verified for r in got)
    assert got[0].body == got[1].body
    assert row.attempts == 1 and row.last_status == 200  # the killed worker's POST was never recorded


async def test_a_worker_stopped_mid_post_waits_for_the_answer_and_records_it(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    receiver: Receiver,
    hook_runtime: Any,
    settings: Settings,
) -> None:
    ws = await make_workspace()
    ep = receiver.endpoint(Answer(delay_s=1.5))
    hook_id = (await create_hook(ws, ep.url))["webhook"]["id"]
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    process = _start(settings)
    try:
        await receiver.wait_for(ep, 1, timeout_s=30)
    finally:
        code, logs = await asyncio.to_thread(
            _stop, process
        )  # SIGTERM while the endpoint takes 1.5 s to answer
    assert code == 0, logs
    [row] = await delivery_rows(hook_runtime, hook_id)
    assert row.status == "delivered" and row.attempts == 1 and row.claimed_until is None
    await asyncio.sleep(0.5)
    assert len(receiver.at(ep)) == 1
