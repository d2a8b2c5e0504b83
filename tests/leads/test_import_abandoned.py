"""An import whose final chunk never comes ends `failed`, with a reason, `OUTREACH_IMPORT_ABANDON_S` after its
last chunk; what its chunks brought stays stored, and a later chunk is refused."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import httpx

from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.leads.helpers import import_chunk, listing, merge_imports
from workers import imports


async def test_an_import_without_its_final_chunk_fails_after_the_documented_time(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan="growth")
    first = await import_chunk(
        http, ws, rows=[{"email": "kept1@abandon.test"}, {"email": "kept2@abandon.test"}]
    )
    assert first.status_code == 200, first.text
    import_id = first.json()["id"]
    await merge_imports(ws)
    settings = ws.runtime.settings
    now = ws.runtime.ports.clock.now()

    def runtime_at(seconds: float) -> Runtime:
        clock = FixedClock(now + timedelta(seconds=seconds))
        return Runtime(
            settings, engine=ws.runtime.engine, ports=dataclasses.replace(ws.runtime.ports, clock=clock)
        )

    imports._last_stale_check = float("-inf")
    await imports.tick(runtime_at(settings.import_abandon_s - 60))  # not yet
    assert (await http.get(f"/api/v1/leads/imports/{import_id}", headers=ws.headers)).json()[
        "status"
    ] == "importing"

    imports._last_stale_check = float("-inf")
    await imports.tick(runtime_at(settings.import_abandon_s + 1))
    ended = (await http.get(f"/api/v1/leads/imports/{import_id}", headers=ws.headers)).json()
    assert ended["status"] == "failed"
    assert "final chunk" in ended["failureReason"] and ended["finishedAt"] is not None
    assert ended["created"] == 2 and ended["queued"] == 0  # what came is stored and counted
    assert (await listing(http, ws, search="abandon.test"))["total"] == 2

    late = await import_chunk(http, ws, importId=import_id, rows=[{"email": "late@abandon.test"}], final=True)
    assert late.status_code == 409 and late.json()["error"]["code"] == "invalid_state"
    assert (await listing(http, ws, search="late@abandon.test"))["total"] == 0
