"""A worker that (re)starts reads every mailbox it may hold at once, not a share of them per tick (issue
25.9): with 1,000 mailboxes it took 100 every 5 s, so mail that arrived while it was down waited 25-30 s on
average (figures: docs/PERFORMANCE.md, "Inbox worker after a restart")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

from outreach_core.inbox import leases
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.imap_client import Maildrop
from tests.inbox_worker.helpers import Replies, imap_mailbox, until
from tests.mail_servers import MailServers
from workers.inbox import Supervisor
from workers.loop import Worker, run_workers

API = "/api/v1"


async def test_a_started_worker_reads_every_mailbox_without_waiting_for_its_next_tick(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(leases, "TAKE_PER_CALL", 2)  # 2 of 6 mailboxes a call, as 100 of 1,000
    rt = make_runtime(inbox_poll_s=60.0)
    ws = await make_workspace()
    replies = Replies(ws)
    for _ in range(6):  # mail that arrived while no worker ran
        _, user, password = await imap_mailbox(ws, mail_servers)
        await Maildrop(mail_servers, user, password).append(await replies.make("while it was down"))

    supervisor = Supervisor(rt, workspace_ids=[ws.workspace_id])

    async def tick(_: Runtime) -> int:
        return await supervisor.tick()

    # the loop as `outreach worker` runs it; after a tick that started nothing it sleeps for an hour here
    stop = asyncio.Event()
    loop = asyncio.create_task(run_workers(rt, [Worker("inbox", tick, interval_s=3600.0)], stop))

    async def every_reply_is_a_thread() -> bool:
        page = (await http.get(f"{API}/threads", headers=ws.headers)).json()
        return int(page["total"]) == 6

    try:
        await until(every_reply_is_a_thread, timeout=60.0, what="a thread for every mailbox's reply")
    finally:
        stop.set()
        await loop
        await supervisor.stop()
    assert len(supervisor.running) == 0
    await replies.assert_each_recorded_once()
