"""Both sides running together on real servers: the inbox worker reads the recipient's INBOX and Junk
folder (IDLE, real leases) while the warmup worker's pass sends to it and then moves the email out of spam.
The inbox worker fetches the warmup email in both folders and records nothing: no message, no thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest

from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from outreach_core.warmup.pipeline import warmup_pass
from tests.conftest import MakeWorkspace
from tests.imap_client import Maildrop
from tests.inbox.ingest import messages_of, threads_of
from tests.inbox_worker.conftest import inbox_runtime
from tests.inbox_worker.helpers import Recorder, Workers, until
from tests.mail_servers import MailServers
from tests.mailboxes.helpers import API
from tests.warmup.helpers import Bridge, pool_mailbox, warmup_runtime


@pytest.fixture
async def workers() -> AsyncIterator[Workers]:
    found = Workers()
    yield found
    await found.stop_all()


async def test_the_inbox_worker_reads_warmup_emails_and_records_none(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    runtime: Runtime,
    mail_servers: MailServers,
    bridge: Bridge,
    workers: Workers,
) -> None:
    a, b = await make_workspace(), await make_workspace()
    a_id, _, _ = await pool_mailbox(a, mail_servers)
    b_id, b_email, b_password = await pool_mailbox(b, mail_servers)
    bridge.spam_for.add(b_email)
    box = Maildrop(mail_servers, b_email, b_password)
    box.ensure("Junk")  # the folder exists before the inbox worker lists b's folders
    for ws, mailbox_id in ((a, a_id), (b, b_id)):
        body = {"warmup": {"enabled": True, "replyRate": 0}}
        assert (
            await http.patch(f"{API}/mailboxes/{mailbox_id}", headers=ws.headers, json=body)
        ).status_code == 200

    reader = Recorder()
    workers.start(inbox_runtime(runtime, inbox_poll_s=1.0), reader, [b.workspace_id], holder="warm-inbox")
    await until(lambda: reader.batches, what="the first sync")

    clock = FixedClock(datetime.now(UTC))
    rt = warmup_runtime(runtime, clock, warmup_tend_after_s=30.0)
    await warmup_pass(rt)
    clock.advance(minutes=11)
    await warmup_pass(rt)
    [received] = bridge.to(b_email)
    await until(lambda: reader.of(b_id, "Junk"), what="the inbox worker reading Junk")

    clock.advance(minutes=1)
    await warmup_pass(rt)  # moved to INBOX, read, flagged
    await until(lambda: reader.of(b_id, "INBOX"), what="the inbox worker reading INBOX")
    token = received.data.split(b"X-Outreach-Warmup: ", 1)[1].split(b"\r\n", 1)[0]
    seen = reader.of(b_id)
    assert {s.folder for s in seen} == {"Junk", "INBOX"} and all(token in s.raw for s in seen)
    assert await box.messages("Junk") == []
    assert await messages_of(b) == [] and await threads_of(b) == []
    assert (await http.get(f"{API}/threads", headers=b.headers)).json()["total"] == 0
