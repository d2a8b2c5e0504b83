"""The recorder against the real database: hits committed in batches, a failed write retried, what is
queued written at stop."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import httpx

from outreach_core.kernel.runtime import Runtime
from outreach_core.tracking.journal import Journal, encode, orphans, read
from outreach_core.tracking.record import record_hits
from outreach_core.tracking.recorder import HitRecorder
from outreach_core.tracking.rules import Hit
from tests.campaigns.helpers import add_lead, campaign_lead_rows, new_campaign, ok, write_send
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.sending.helpers import rows

AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"


async def a_send(http: httpx.AsyncClient, ws: WorkspaceHandle) -> str:
    cid = await new_campaign(http, ws)
    lead = await add_lead(ws, f"recorder-{ws.workspace_id[-6:]}@people.example")
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [lead]})
    [cl] = await campaign_lead_rows(ws, cid)
    return await write_send(ws, cl.id, sent_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=1))


def hits(send_id: str, n: int, kind: str = "open") -> list[Hit]:
    now = dt.datetime.now(dt.UTC)
    return [
        Hit(kind, send_id, now + dt.timedelta(milliseconds=i), None, False, AGENT, "203.0.113.5")  # type: ignore[arg-type]
        for i in range(n)
    ]


class Writes:
    """The real `record_hits`, counting its transactions; the first `failing` of them fail."""

    def __init__(self, runtime: Runtime, failing: int = 0) -> None:
        self.runtime = runtime
        self.failing = failing
        self.batches: list[int] = []

    async def __call__(self, batch: Sequence[Hit], replay: bool = False) -> int:
        if self.failing:
            self.failing -= 1
            raise ConnectionError("database unreachable")
        self.batches.append(len(batch))
        return await self.runtime.system(record_hits, batch, replay=replay)


async def test_a_burst_is_committed_in_few_transactions_before_each_answer(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    send_id = await a_send(http, ws)
    writes = Writes(ws.runtime)
    recorder = HitRecorder(writes, wait_s=30, max_queued=10_000)
    answered = await asyncio.gather(*(recorder.record(h) for h in hits(send_id, 300)))
    assert all(answered)  # each waited for its own commit
    assert sum(writes.batches) == 300 and len(writes.batches) < 300
    [send] = await rows(ws, "sends", id=send_id)
    assert send.open_count == 300 and send.opened_at is not None
    await recorder.close()


async def test_batches_of_other_sizes_and_sends_add_to_each_send_in_turn(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """The counts' update is built once and reused (`update_each(reuse=...)`): each batch, whatever its
    sends (of two workspaces here) and size, adds to its own sends only, and the first time kept is the
    earliest."""
    ws, other = await make_workspace(), await make_workspace()
    first, second = await a_send(http, ws), await a_send(http, other)
    early = hits(first, 1)[0].at - dt.timedelta(minutes=5)
    click = dataclasses.replace(hits(second, 1)[0], kind="click", url="https://example.com/")
    assert await ws.runtime.system(record_hits, [*hits(first, 2), click]) == 3
    assert await ws.runtime.system(record_hits, [*hits(second, 1), *hits(first, 3)]) == 4
    assert await ws.runtime.system(record_hits, [dataclasses.replace(hits(first, 1)[0], at=early)]) == 1
    [a], [b] = await rows(ws, "sends", id=first), await rows(other, "sends", id=second)
    assert (a.open_count, a.click_count, b.open_count, b.click_count) == (6, 0, 1, 1)
    assert a.opened_at == early and a.clicked_at is None
    assert b.opened_at is not None and b.clicked_at == click.at


async def test_a_failed_write_is_retried_and_stopping_writes_what_is_queued(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    send_id = await a_send(http, ws)
    writes = Writes(ws.runtime, failing=1)
    recorder = HitRecorder(writes, wait_s=0.01, max_queued=10_000)
    first = await recorder.record(hits(send_id, 1, "click")[0])
    assert first is False  # answered without waiting longer for a database that failed
    assert await recorder.drain()
    [send] = await rows(ws, "sends", id=send_id)
    assert send.click_count == 1 and recorder.failures == 1

    no_wait = HitRecorder(Writes(ws.runtime), wait_s=0, max_queued=10_000)
    for h in hits(send_id, 5):
        assert await no_wait.record(h) is False
    await no_wait.close()
    [send] = await rows(ws, "sends", id=send_id)
    assert send.open_count == 5


async def test_hits_of_a_deleted_send_are_dropped(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    assert await ws.runtime.system(record_hits, hits("snd_gone", 3)) == 0


async def test_journaled_hits_answer_at_once_and_survive_the_process(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, tmp_path: Path
) -> None:
    """A process whose database writes fail, then dies (its journal lock released, its file left): the next
    start replays its hits. A hit both committed and still in a journal (death between the commit and the
    journal's deletion) is not counted twice."""
    ws = await make_workspace()
    send_id = await a_send(http, ws)
    dead = HitRecorder(
        Writes(ws.runtime, failing=1_000), wait_s=30, max_queued=10_000, journal=Journal(tmp_path)
    )
    assert all([await dead.record(h) for h in hits(send_id, 4, "click")])  # answered without any commit
    await asyncio.sleep(0.05)
    assert dead.journal is not None and dead.failures >= 1
    os.close(dead.journal.current.fd)  # what the process's death does to its lock
    for segment in dead._segments:
        os.close(segment.fd)
    dead._closed = True  # the dead process's flusher is gone too
    if dead._task is not None:
        dead._task.cancel()

    alive = HitRecorder(Writes(ws.runtime), wait_s=30, max_queued=10_000, journal=Journal(tmp_path))
    assert await alive.replay() == 4
    [send] = await rows(ws, "sends", id=send_id)
    assert send.click_count == 4
    assert await alive.replay() == 0  # replayed once

    # committed and journaled both: a copy of a segment survives its deletion
    copy = tmp_path / "tracking-1-copy.jsonl"
    assert alive.journal is not None
    await alive.record(hits(send_id, 1, "click")[0])
    shutil.copy(alive.journal.current.path, copy)
    assert await alive.drain()
    [send] = await rows(ws, "sends", id=send_id)
    assert send.click_count == 5
    later = HitRecorder(Writes(ws.runtime), wait_s=30, max_queued=10_000, journal=Journal(tmp_path))
    await later.replay()
    [send] = await rows(ws, "sends", id=send_id)
    assert send.click_count == 5 and not copy.exists()
    await alive.close()
    await later.close()
    assert list(tmp_path.iterdir()) == []  # a clean stop leaves no journal


def test_a_line_cut_short_by_a_crash_is_skipped(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    [hit] = hits("snd_1", 1)
    journal.append(dataclasses.replace(hit, id="trk_1"))
    os.write(journal.current.fd, encode(dataclasses.replace(hit, id="trk_2"))[:20])
    os.close(journal.current.fd)
    [orphan] = orphans(tmp_path)
    assert [h.id for h in read(orphan)] == ["trk_1"]
    assert read(orphan)[0] == dataclasses.replace(hit, id="trk_1")
