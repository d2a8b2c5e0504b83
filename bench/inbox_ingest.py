"""Throughput of `ingest_batch`: parse + classify + match + record (threads, messages, effects, events), one
process, no AI port (rules only).

1. Seeds a database (OUTREACH_DATABASE_URL, default a fresh SQLite file; PostgreSQL: its public schema is
   dropped first): one workspace, one mailbox, one running campaign, `--leads` leads each sent the first
   email (a `sends` ledger row with its Message-ID).
2. Builds messages as mail clients write them to those emails: replies quoted below an attribution line
   (60 %), out-of-office replies with a return date (10 %), unsubscribe requests (10 %), RFC 3464 bounces
   (10 %), and the messages of the bounce corpus (10 %, matching nothing: read and ignored).
3. Feeds them to `ingest_batch` in folder batches of each `--batch` size (fresh leads for every message)
   and prints messages per second and the per-batch p50/p95, and the process's CPU time (on a shared
   machine the wall-clock rate shows the other load as much as this code).

    .venv/bin/python bench/inbox_ingest.py [--leads 20000] [--messages 2000] [--batch 50 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _seed import bench_lead  # noqa: E402
from sqlalchemy import text  # noqa: E402

from outreach_core.inbox.matching import match_messages  # noqa: E402
from outreach_core.inbox.pipeline import Fetched, FolderBatch, ingest_batch, prepare  # noqa: E402
from outreach_core.inbox.record import Prepared, inbox_context  # noqa: E402
from outreach_core.kernel.bulk import insert_rows  # noqa: E402
from outreach_core.kernel.context import SystemContext  # noqa: E402
from outreach_core.kernel.crypto import encrypt  # noqa: E402
from outreach_core.kernel.db.migrate import migrate  # noqa: E402
from outreach_core.kernel.db.tables import (  # noqa: E402
    campaign_leads,
    campaign_steps,
    campaign_variants,
    campaigns,
    leads,
    mailboxes,
    sends,
)
from outreach_core.kernel.ids import new_ids  # noqa: E402
from outreach_core.kernel.runtime import Runtime  # noqa: E402
from outreach_core.kernel.settings import Settings  # noqa: E402
from outreach_core.workspace.setup import init_workspace  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "bounces" / "bounces"
CHUNK = 5000
SUBJECT = "Quick question, First{n}"
ANSWERS = [
    "Thanks, sounds interesting. Can you send pricing?",
    "Not interested, thanks.",
    "Let's talk Thursday at 3pm CET.",
    "Danke, wir haben schon einen Anbieter.",
    "Merci, je ne suis pas la bonne personne.",
    "Gracias, ahora no es buen momento.",
]
ORIGINAL = 'Hi First,\n\nA note about Company.\n\nBest,\nSam\n\nReply "stop" to unsubscribe.\n'


async def seed(rt: Runtime, n_leads: int, stop_for_company: bool) -> dict[str, Any]:
    made = await rt.system(
        init_workspace, email=f"bench-{os.getpid()}@example.com", name="Bench", workspace="Inbox bench",
        slug=f"inbox-bench-{os.getpid()}", plan="agency",
    )  # fmt: skip
    ws, now = made.workspaceId, datetime.now(UTC)
    sent_at = now - timedelta(days=1)
    box, cid, step, variant = "mbx_ib0", "cmp_ib0", "stp_ib0", "var_ib0"
    async with rt.engine.begin() as conn:
        await conn.execute(
            mailboxes.insert().values(
                id=box, workspace_id=ws, email="sam@sender.test", domain="sender.test", provider="smtp",
                ramp_started_on="2026-01-01", smtp_host="127.0.0.1", smtp_port=25, smtp_security="starttls",
                smtp_user="sam@sender.test", imap_host="127.0.0.1", imap_port=993, imap_security="tls",
                imap_user="sam@sender.test", password_encrypted=encrypt(rt.settings, "x"), created_at=now,
            )
        )  # fmt: skip
        await conn.execute(
            campaigns.insert().values(
                id=cid, workspace_id=ws, name="Bench", status="running", window_start=0, window_end=1440,
                days=127, stop_for_company=stop_for_company, started_at=now, created_at=now, updated_at=now,
            )
        )  # fmt: skip
        await conn.execute(
            campaign_steps.insert().values(
                id=step, workspace_id=ws, campaign_id=cid, position=0, wait_days=0, created_at=now
            )
        )
        await conn.execute(
            campaign_variants.insert().values(
                id=variant, workspace_id=ws, campaign_id=cid, step_id=step, position=0, subject="Q",
                body="<p>Hi</p>", created_at=now,
            )
        )  # fmt: skip
    people: list[tuple[str, str]] = []
    for first in range(0, n_leads, CHUNK):
        count = min(CHUNK, n_leads - first)
        ids, cl_ids, send_ids = new_ids("lead", count), new_ids("cl", count), new_ids("snd", count)
        lead_rows, cl_rows, send_rows = [], [], []
        for k in range(count):
            i = first + k
            row = bench_lead(i, ids[k], ws, now)
            row["email"], row["domain"] = f"person{i}@company{i}.example", f"company{i}.example"
            lead_rows.append(row)
            message_id = f"<bench-{i}-{send_ids[k][-8:]}@sender.test>"
            people.append((row["email"], message_id))
            cl_rows.append(
                {"id": cl_ids[k], "workspace_id": ws, "campaign_id": cid, "lead_id": ids[k], "added_at": now,
                 "status": "contacted", "step": 1, "mailbox_id": box, "last_sent_at": sent_at,
                 "next_at": now + timedelta(days=2), "thread_message_id": message_id,
                 "last_message_id": message_id}
            )  # fmt: skip
            send_rows.append(
                {"id": send_ids[k], "workspace_id": ws, "campaign_id": cid, "campaign_lead_id": cl_ids[k],
                 "lead_id": ids[k], "mailbox_id": box, "step_id": step, "step": 0, "variant_id": variant,
                 "message_id": message_id, "to_email": row["email"], "subject": SUBJECT.format(n=i),
                 "body_html": "<p>Hi</p>", "body_text": ORIGINAL, "status": "sent", "attempts": 1,
                 "created_at": sent_at, "sent_at": sent_at}
            )  # fmt: skip
        async with rt.engine.begin() as conn:
            from types import SimpleNamespace

            owner: Any = SimpleNamespace(conn=conn, workspace_id=ws)
            await insert_rows(owner, leads, lead_rows)
            await insert_rows(owner, campaign_leads, cl_rows)
            await conn.execute(sends.insert(), send_rows)
    async with rt.engine.begin() as conn:
        await conn.execute(text("ANALYZE"))
    return {"workspace_id": ws, "mailbox_id": box, "people": people}


def message(kind: str, email: str, our_id: str, n: int) -> bytes:
    if kind == "bounce":
        return (
            "From: MAILER-DAEMON@mx.example\r\nTo: sam@sender.test\r\n"
            f"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: <dsn-{n}@mx.example>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: multipart/report; "
            'report-type=delivery-status; boundary="B"\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nYour '
            "message could not be delivered.\r\n--B\r\nContent-Type: message/delivery-status\r\n\r\n"
            f"Reporting-MTA: dns; mx.example\r\n\r\nFinal-Recipient: rfc822; {email}\r\nAction: failed\r\n"
            f"Status: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 <{email}>: User unknown\r\n\r\n--B\r\n"
            f"Content-Type: text/rfc822-headers\r\n\r\nMessage-ID: {our_id}\r\nTo: {email}\r\n\r\n--B--\r\n"
        ).encode()
    msg = EmailMessage(policy=SMTP)
    msg["From"] = f"Person {n} <{email}>"
    msg["To"] = "Sam <sam@sender.test>"
    subject = f"Automatic reply: {SUBJECT.format(n=n)}" if kind == "ooo" else f"Re: {SUBJECT.format(n=n)}"
    msg["Subject"] = subject
    msg["Message-ID"] = f"<reply-{n}@client.example>"
    msg["In-Reply-To"] = our_id
    msg["References"] = our_id
    quoted = "\n".join(f"> {line}" for line in ORIGINAL.splitlines())
    if kind == "ooo":
        msg["Auto-Submitted"] = "auto-replied"
        text = "I am out of the office until Monday, December 7th, 2026 with no access to email."
    elif kind == "unsubscribe":
        text = "Please remove me from your list."
    else:
        text = ANSWERS[n % len(ANSWERS)]
    msg.set_content(f"{text}\n\nOn Mon, Nov 23, 2026 at 9:00 AM Sam <sam@sender.test> wrote:\n{quoted}\n")
    return msg.as_bytes(policy=SMTP)


def build(people: list[tuple[str, str]], count: int, rng: random.Random) -> list[bytes]:
    corpus = sorted(CORPUS.glob("*.eml"))
    out: list[bytes] = []
    for n in range(count):
        roll = rng.random()
        if roll < 0.1 and corpus:
            out.append(corpus[n % len(corpus)].read_bytes())
            continue
        email, our_id = people[n]
        kind = "ooo" if roll < 0.2 else "unsubscribe" if roll < 0.3 else "bounce" if roll < 0.4 else "reply"
        out.append(message(kind, email, our_id, int(email[6:].split("@")[0])))
    return out


def folder_batches(seeded: dict[str, Any], raws: list[bytes], size: int, uid0: int) -> list[FolderBatch]:
    """The messages as the worker would hand them over: INBOX batches of `size`, UIDs from `uid0`."""
    arrived = datetime.now(UTC)
    out = []
    for start in range(0, len(raws), size):
        chunk = raws[start : start + size]
        fetched = [Fetched(uid0 + start + k, arrived, len(r), r) for k, r in enumerate(chunk)]
        out.append(
            FolderBatch(
                seeded["workspace_id"], seeded["mailbox_id"], "INBOX", "inbox", 1, fetched[-1].uid, fetched
            )
        )
    return out


async def run_batches(rt: Runtime, batches: list[FolderBatch]) -> tuple[float, float, list[float], int]:
    durations: list[float] = []
    recorded = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    for batch in batches:
        b0 = time.perf_counter()
        recorded += await ingest_batch(rt, batch)
        durations.append(time.perf_counter() - b0)
    return time.perf_counter() - t0, time.process_time() - c0, durations, recorded


async def _match(ctx: SystemContext, batch: FolderBatch, prepared: list[Prepared]) -> int:
    wctx = inbox_context(ctx, batch.workspace_id)
    matches = await match_messages(wctx, batch.mailbox_id, [(p.parsed, p.verdict) for p in prepared])
    return sum(m is not None for m in matches)


async def classify_and_match(rt: Runtime, batches: list[FolderBatch]) -> tuple[float, float, int]:
    """The issue's "classification and matching" alone: parse, classify and find each message's send or lead
    (one read transaction per batch), nothing written."""
    matched = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    for batch in batches:
        matched += await rt.system_read(_match, batch, prepare(batch))
    return time.perf_counter() - t0, time.process_time() - c0, matched


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--leads", type=int, default=20_000)
    parser.add_argument("--messages", type=int, default=2000, help="per batch size")
    parser.add_argument("--batch", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--stop-for-company", action="store_true", help="the campaign stops for company")
    args = parser.parse_args()
    url = os.environ.get("OUTREACH_DATABASE_URL") or (
        f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='inbox-bench-')}/outreach.db"
    )
    settings = Settings(database_url=url, secret_key="bench-secret", log_json=False)
    assert args.leads >= args.messages * len(args.batch), "every message needs a lead of its own"

    async def run() -> None:
        import structlog

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))  # errors only
        rt = Runtime(settings)
        engine = "PostgreSQL" if rt.engine.dialect.name == "postgresql" else "SQLite"
        if engine == "PostgreSQL":
            async with rt.engine.begin() as conn:
                await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
                await conn.execute(text("CREATE SCHEMA public"))
        await migrate(rt.engine)
        t0 = time.perf_counter()
        seeded = await seed(rt, args.leads, args.stop_for_company)
        print(f"{engine}: seeded {args.leads} leads with a sent email in {time.perf_counter() - t0:.1f} s")
        rng = random.Random(17)
        people = seeded["people"]
        for k, size in enumerate(args.batch):
            mine = people[k * args.messages : (k + 1) * args.messages]
            raws = build(mine, args.messages, rng)
            batches = folder_batches(seeded, raws, size, 1 + k * args.messages)
            wall, cpu, matched = await classify_and_match(rt, batches)
            print(
                f"{engine} batch {size:>3}, classification and matching only: {len(raws)} messages "
                f"({matched} matched) in {wall:.2f} s = {len(raws) / wall:,.0f} msgs/s; "
                f"CPU {cpu:.2f} s = {len(raws) / cpu:,.0f} msgs per CPU-second"
            )
            wall, cpu, durations, recorded = await run_batches(rt, batches)
            q = statistics.quantiles(durations, n=20) if len(durations) > 1 else durations * 19
            p50 = statistics.median(durations) * 1000
            print(
                f"{engine} batch {size:>3}: {len(raws)} messages ({recorded} recorded) in {wall:.2f} s = "
                f"{len(raws) / wall:,.0f} msgs/s; per batch p50 {p50:.0f} ms, p95 {q[18] * 1000:.0f} ms; "
                f"CPU {cpu:.2f} s = {len(raws) / cpu:,.0f} msgs per CPU-second (this process, all threads)"
            )
        await rt.dispose()

    asyncio.run(run())


if __name__ == "__main__":
    main()
