"""kill -9 of the worker process while it merges an import loses and duplicates nothing: each part is merged
in one transaction (its leads, list memberships, counters and its removal from the queue commit together),
so a part the killed process was merging is merged again, whole, by the next one. Both ways the merge runs
in a process of its own: `outreach worker --only import` (started again here), and the `import` child of
`outreach serve` (started again by the server)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import func

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, list_leads
from outreach_core.kernel.settings import Settings
from tests.conftest import MakeWorkspace, free_port
from tests.test_cli import OUTREACH, ROOT, _env
from tests.test_serve import worker_children

ROWS, CHUNK = 12_000, 2_000


class _Merger:
    """The process that merges: `outreach worker --only import`, or `outreach serve`'s `import` child."""

    def __init__(self, settings: Settings, under: str) -> None:
        self.settings, self.under = settings, under
        args = ["worker", "--only", "import"] if under == "worker" else ["serve", "--port", str(free_port())]
        self.process = subprocess.Popen(
            [*OUTREACH, *args],
            env=_env(settings),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def merging_pid(self) -> int:
        if self.under == "worker":
            return self.process.pid
        return worker_children(self.process.pid)["import"]

    def kill_9(self) -> None:
        """kill -9 of the merging process; the one that takes over is started here, or by the server."""
        os.kill(self.merging_pid(), signal.SIGKILL)
        if self.under == "worker":
            self.process.wait(timeout=10)
            self.process = _Merger(self.settings, "worker").process

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=20) == 0 or self.under == "worker"


@pytest.mark.parametrize("under", ["worker", "serve"])
async def test_kill_9_of_the_merging_process_loses_and_duplicates_nothing(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, settings: Settings, under: str
) -> None:
    ws = await make_workspace(plan="agency")
    listed = await http.post("/api/v1/lists", headers=ws.headers, json={"name": "killed"})
    list_id = listed.json()["id"]
    rows = [{"email": f"k{i}@kill{i % 50}.test", "firstName": f"K{i}"} for i in range(ROWS)]
    rows += [{"email": "k7@kill7.test"}, {"email": "not an address"}]  # a duplicate and an invalid row
    import_id = None
    for first in range(0, len(rows), CHUNK):
        body: dict[str, Any] = {"rows": rows[first : first + CHUNK], "final": first + CHUNK >= len(rows)}
        body |= {"importId": import_id} if import_id else {"list": {"id": list_id}}
        response = await http.post("/api/v1/leads/import", headers=ws.headers, json=body)
        assert response.status_code == 200, response.text
        import_id = response.json()["id"]

    async def state() -> dict[str, Any]:
        return (await http.get(f"/api/v1/leads/imports/{import_id}", headers=ws.headers)).json()  # type: ignore[no-any-return]

    kills = 0
    merger = _Merger(settings, under)
    try:
        deadline = time.monotonic() + 180
        progress = ROWS + 2  # the queue's size at the last kill: kill a process that has merged something
        while (await state())["queued"] > 0:
            assert time.monotonic() < deadline, await state()
            queued = (await state())["queued"]
            if kills < 3 and queued < min(progress, ROWS):  # merging: kill it in the middle of a part
                await asyncio.sleep(0.05 * (kills + 1))
                merger.kill_9()
                kills += 1
                progress = queued if under == "serve" else ROWS + 2
            await asyncio.sleep(0.05)
    finally:
        merger.stop()
    assert kills == 3
    done = await state()
    assert done["created"] == ROWS and done["duplicates"] == 1 and done["invalid"] == 1
    assert done["rows"] == ROWS + 2 and done["queued"] == 0
    assert done["status"] in ("enriching", "done")

    async def counts(ctx: WorkspaceContext) -> tuple[int, int, int]:
        lead_table, members = scoped(ctx, leads), scoped(ctx, list_leads)
        stored = (await ctx.conn.execute(lead_table.select(func.count()))).scalar_one()
        distinct = (
            await ctx.conn.execute(lead_table.select(func.count(func.distinct(leads.c.email))))
        ).scalar_one()
        on_list = (
            await ctx.conn.execute(members.select(func.count()).where(list_leads.c.list_id == list_id))
        ).scalar_one()
        return int(stored), int(distinct), int(on_list)

    assert await ws.runtime.read(await ws.principal(), counts) == (ROWS, ROWS, ROWS)
    stats = (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()
    assert stats["total"] == ROWS  # the trigger-kept counters agree
