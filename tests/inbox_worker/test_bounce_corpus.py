"""The whole labelled bounce corpus (tests/data/bounces) through the whole inbox, as in production.

For every message the sender worker really sends the lead it is about a campaign email over SMTP (aiosmtpd),
from one of ten mailboxes; the message, rewritten to return that email (`bounce_corpus.as_ours`), is
APPENDed to that mailbox's INBOX on Dovecot; the inbox worker (the supervisor with the real IMAP adapter)
reads every mailbox and records what it finds. What it recorded is then read back per message (mailbox and
UID): bounces must be bounces of the right lead with the right hard/soft flag, feedback reports complaints,
auto-replies auto-replies, and neither the message that is not a bounce nor the delivered DSN a bounce.
Run with `-s` to see the per-stage figures and every miss.
"""

from __future__ import annotations

import asyncio
import imaplib
import re
import ssl
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import inbox_messages, leads, threads
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from tests.inbox.ingest import read
from tests.inbox_worker.bounce_corpus import Case, Figures, as_ours, cases, rounds
from tests.inbox_worker.helpers import Recorder, Workers, checkpoints_of, until
from tests.mail_servers import MailServers
from tests.sending.helpers import add_lead, launched_campaign, rows, smtp_mailbox, update_rows
from workers import sender

MAILBOXES = 10
ONE_STEP = [
    {"variants": [{"subject": "Hello {{first_name|there}}", "body": "A short note.\n\n{{unsubscribe}}"}]}
]
REDACTED = "redacted-complainer@complaints.example"  # the lead of an ARF report that names nobody
_APPENDUID = re.compile(rb"APPENDUID \d+ (\d+)")


def append(servers: MailServers, user: str, password: str, messages: list[bytes]) -> list[int]:
    """APPEND to the user's INBOX as a delivery agent would (arrival: now); the UIDs given (UIDPLUS)."""
    context = ssl.create_default_context(cafile=str(servers.ca.ca_file))
    client = imaplib.IMAP4_SSL(servers.imap.host, servers.imap.tls_port, ssl_context=context)
    uids: list[int] = []
    try:
        client.login(user, password)
        at = imaplib.Time2Internaldate(datetime.now(UTC).timestamp())
        for raw in messages:
            status, data = client.append("INBOX", "", at, raw)
            assert status == "OK", data
            found = _APPENDUID.search(data[0] or b"")
            assert found is not None, data
            uids.append(int(found.group(1)))
    finally:
        client.logout()
    return uids


async def send_all(ws: Any, boxes: list[str], expected: int) -> list[Any]:
    """Sender passes (the gap of every mailbox of the workspace, `boxes`, reset between them, in one
    statement) until `expected` emails went out."""
    assert len(await rows(ws, "mailboxes")) == len(boxes)  # the reset below touches these and only these
    for _ in range(expected):
        await sender.tick(ws.runtime)
        sent = [r for r in await rows(ws, "sends") if r.status == "sent"]
        if len(sent) >= expected:
            return sent
        await update_rows(ws, "mailboxes", {"next_send_at": None})
    raise AssertionError(f"only {len(sent)} of {expected} emails were sent")


async def recorded(ws: Any) -> dict[tuple[str, int], tuple[Any, str]]:
    """Every received message recorded in the workspace, by (mailbox, UID), with its thread's lead."""

    def stmt(ctx: WorkspaceContext) -> Any:
        return (
            scoped(ctx, inbox_messages)
            .select(inbox_messages, leads.c.email.label("lead_email"))
            .join(threads, threads.c.id == inbox_messages.c.thread_id)
            .join(leads, leads.c.id == threads.c.lead_id)
            .where(inbox_messages.c.direction == "in")
        )

    return {(r.mailbox_id, r.uid): (r, r.lead_email) for r in await read(ws, stmt)}


async def test_the_bounce_corpus_is_recorded_as_bounces_of_the_right_leads(
    make_runtime: Callable[..., Runtime],
    make_workspace: MakeWorkspace,
    mail_servers: MailServers,
    workers: Workers,
    http: httpx.AsyncClient,
) -> None:
    stages = _Stages()
    ws = await make_workspace()
    imap = {"imap_host": mail_servers.imap.host, "imap_port": mail_servers.imap.tls_port}
    boxes = [
        await smtp_mailbox(ws, mail_servers.smtp["starttls"], mail_servers.users, daily_limit=1000, **imap)
        for _ in range(MAILBOXES)
    ]
    address = {r.id: r.email for r in await rows(ws, "mailboxes")}
    passwords = mail_servers.users.snapshot()

    all_cases = cases()
    placed = [c if c.leads or c.kind != "feedback_report" else _redacted(c) for c in all_cases]
    lead_ids = {a: await add_lead(ws, a) for a in sorted({a for c in placed for a in c.leads})}
    campaigns = [
        await launched_campaign(
            http, ws, boxes, [lead_ids[a] for c in group for a in c.leads], steps=ONE_STEP
        )
        for group in rounds(tuple(placed))
    ]
    round_of = {c.file: n for n, group in enumerate(rounds(tuple(placed))) for c in group}
    stages.done(f"{MAILBOXES} mailboxes, {len(lead_ids)} leads, {len(campaigns)} campaigns launched")
    sends = await send_all(ws, boxes, sum(len(c.leads) for c in placed))
    by_lead = {(s.campaign_id, s.lead_id): s for s in sends}
    stages.done(f"{len(sends)} emails sent over SMTP")

    # every message to the mailbox that sent the email it returns, rewritten to return that email
    delivered: dict[str, list[tuple[Case, bytes]]] = defaultdict(list)
    for case in placed:
        if not case.leads:  # the message that is not a bounce: to the first mailbox as it is
            delivered[boxes[0]].append((case, case.raw))
            continue
        send = by_lead[(campaigns[round_of[case.file]], lead_ids[case.leads[0]])]
        ours = as_ours(case.raw, send.message_id, address[send.mailbox_id], case.leads)
        delivered[send.mailbox_id].append((case, ours))

    rt = make_runtime(inbox_poll_s=60.0, inbox_timeout_s=30.0)
    recorder = Recorder()
    sup = workers.start(rt, recorder, [ws.workspace_id], holder="corpus")
    await until(lambda: len(sup.running) == MAILBOXES, what="every mailbox taken")
    where: dict[tuple[str, int], tuple[Case, bytes]] = {}
    for box, items in delivered.items():
        user = address[box]
        uids = await asyncio.to_thread(append, mail_servers, user, passwords[user], [raw for _, raw in items])
        where.update({(box, uid): item for uid, item in zip(uids, items, strict=True)})
    last = {box: max(uid for b, uid in where if b == box) for box in delivered}
    stages.done(f"every mailbox taken by the inbox worker, {len(where)} messages APPENDed")

    async def all_read() -> bool:
        for box, uid in last.items():
            checkpoint = (await checkpoints_of(rt, box)).get("INBOX")
            if checkpoint is None or checkpoint[1] < uid:
                return False
        return True

    await until(all_read, timeout=240.0, what="every message read")
    stages.done("every message read and recorded by the inbox worker")
    stored = await recorded(ws)

    figures = Figures()
    wrong: list[str] = []
    for key, (case, ours) in sorted(where.items(), key=lambda kv: kv[1][0].file):
        row, lead_email = stored.get(key, (None, None))
        figures.add(case, ours, row, lead_email)
        wrong += _wrong(case, row, lead_email)
    print("\n" + stages.report() + "\n" + figures.report())
    print(f"  kinds (label, recorded): {sorted(figures.kinds.items())}")
    assert not wrong, wrong
    assert figures.bounces >= 410
    assert figures.recorded / figures.bounces >= 0.95
    assert figures.hard_right / figures.hard_rows >= 0.90


class _Stages:
    """Wall time of each stage, printed with the figures (`-s`): where the test's time goes."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._lines: list[str] = []

    def done(self, what: str) -> None:
        now = time.monotonic()
        self._lines.append(f"  {now - self._last:6.1f} s  {what}")
        self._last = now

    def report(self) -> str:
        return "stages (wall time):\n" + "\n".join(self._lines)


def _wrong(case: Case, row: Any | None, lead_email: str | None) -> list[str]:
    """What is wrong with how a message that is not a failure was recorded (nothing: [])."""
    kind = row.kind if row is not None else None
    if case.kind == "feedback_report":
        want = "unsubscribe_request" if case.name == "arf-26.eml" else "complaint"  # Apple's button
        if kind != want or lead_email not in case.leads:
            return [f"{case.name}: {kind} for {lead_email}, not {want} for {case.leads}"]
    elif case.kind == "auto_reply":
        if kind not in ("auto_reply", "out_of_office") or lead_email not in case.leads:
            return [f"{case.name}: {kind} for {lead_email}, not an auto-reply of {case.leads}"]
    elif (case.kind == "not_bounce" or case.delivered_dsn) and kind == "bounce":
        return [f"{case.name}: recorded as a bounce"]
    return []


def _redacted(case: Case) -> Case:
    """An ARF report that names no recipient (redacted) is placed by the Message-ID of the returned email:
    it returns an email sent to a lead of its own."""
    return Case(case.file, case.kind, case.family, (REDACTED,), case.expected)
