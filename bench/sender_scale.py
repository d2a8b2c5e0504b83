"""The sender at scale: 1,000 mailboxes and 1,000,000 campaign leads.

1. Seeds a database (OUTREACH_DATABASE_URL, default a fresh SQLite file): one workspace on the agency plan,
   N mailboxes, M leads in four time zones, 10 running campaigns (two steps) each with N/10 mailboxes and
   M/10 leads.
2. Times the scheduling pass (`plan_batch`: due mailboxes, stop rules, windows, composing every email and
   writing the batch to the ledger) several times, every mailbox due each time.
3. Optionally (`--sink-seconds S`) runs the sender worker for S seconds against a local aiosmtpd sink
   (STARTTLS, AUTH) with gaps `--min-gap`..`--max-gap`, logging every accepted message to a JSONL file that
   `bench/check_sink.py` checks independently of the sender's own bookkeeping.

    .venv/bin/python bench/sender_scale.py [--mailboxes 1000] [--leads 1000000] [--sink-seconds 600]
    .venv/bin/python bench/sender_scale.py --reuse --passes 0 --sink-seconds 300 --daily-limit 8 \
        --window 540-1200      # rerun on the seeded database with tighter rules (same OUTREACH_DATABASE_URL)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _seed import (  # noqa: E402
    add_campaign,
    add_campaign_leads,
    assign_mailboxes,
    bench_lead,
    bench_mailbox,
    bench_workspace,
)
from sqlalchemy import text  # noqa: E402

from outreach_core.kernel.crypto import encrypt  # noqa: E402
from outreach_core.kernel.db.migrate import migrate  # noqa: E402
from outreach_core.kernel.db.tables import (  # noqa: E402
    campaigns,
    mailboxes,
)
from outreach_core.kernel.runtime import Runtime  # noqa: E402
from outreach_core.kernel.settings import Settings  # noqa: E402
from outreach_core.sending.planner import plan_batch  # noqa: E402

CAMPAIGNS = 10
ZONES = ("UTC", "America/New_York", "Europe/Berlin", "Asia/Tokyo")
PASSWORD = "bench-password"


async def seed(
    rt: Runtime, n_mailboxes: int, n_leads: int, host: str, port: int, gaps: tuple[int, int]
) -> str:
    ws, _ = await bench_workspace(rt, "sender", "Sender bench")
    now = datetime.now(UTC)
    secret = encrypt(rt.settings, PASSWORD)
    box_ids = [f"mbx_sb{i:05d}" for i in range(n_mailboxes)]
    cids = [f"cmp_sb{k:02d}" for k in range(CAMPAIGNS)]
    async with rt.engine.begin() as conn:
        await conn.execute(
            mailboxes.insert(),
            [
                bench_mailbox(
                    i,
                    box_ids[i],
                    ws,
                    now,
                    host,
                    display_name=f"Sender {i}",
                    ramp_enabled=False,
                    daily_limit=500,
                    ramp_started_on="2026-01-01",
                    min_gap_s=gaps[0],
                    max_gap_s=gaps[1],
                    smtp_port=port,
                    password_encrypted=secret,
                )
                for i in range(n_mailboxes)
            ],
        )
        steps = [
            (0, "Quick question, {{first_name|there}}",
             "<p>{Hi|Hello} {{first_name|there}}, a note about {{company}}.</p><p>{{unsubscribe}}</p>"),
            (3, "", "<p>Bumping this.</p>"),
        ]  # fmt: skip
        for k, cid in enumerate(cids):
            await add_campaign(
                conn,
                ws,
                cid,
                f"sb{k:02d}",
                steps,
                now,
                name=f"Bench {k}",
                timezone_fallback="UTC",
                window_start=0,
                window_end=1440,
                days=127,
            )
        await assign_mailboxes(conn, ws, [(cids[i % CAMPAIGNS], b) for i, b in enumerate(box_ids)])

    def lead(i: int, lead_id: str) -> dict[str, Any]:
        return bench_lead(i, lead_id, ws, now, timezone=ZONES[i % len(ZONES)])

    def campaign_lead(i: int, cl_id: str, lead_id: str) -> dict[str, Any]:
        return {"id": cl_id, "workspace_id": ws, "campaign_id": cids[i % CAMPAIGNS], "lead_id": lead_id,
                "added_at": now}  # fmt: skip

    await add_campaign_leads(rt, ws, n_leads, lead, campaign_lead)
    async with rt.engine.begin() as conn:
        await conn.execute(text("ANALYZE"))
    return ws


async def time_passes(rt: Runtime, passes: int) -> list[tuple[float, int, float]]:
    """(wall s, emails planned, CPU s of this process) per pass: on a shared machine the CPU is the steadier
    figure (the database server's own CPU, PostgreSQL's, is not in it)."""
    out = []
    for _ in range(passes):
        async with rt.engine.begin() as conn:
            await conn.execute(mailboxes.update().values(next_send_at=None))
        t0, c0 = time.perf_counter(), time.process_time()
        batch = await rt.system(plan_batch)
        out.append((time.perf_counter() - t0, len(batch.jobs), time.process_time() - c0))
    return out


async def undo_timing_claims(rt: Runtime) -> None:
    """The timed passes wrote batches that were never handed off: drop them so the sink run starts clean."""
    async with rt.engine.begin() as conn:
        await conn.execute(text("DELETE FROM sends"))
        await conn.execute(
            text("UPDATE campaign_leads SET next_at = NULL, mailbox_id = NULL WHERE status = 'not_contacted'")
        )
        await conn.execute(mailboxes.update().values(next_send_at=None, sent_count=0, sent_day=None))


class Sink:
    """aiosmtpd with STARTTLS and AUTH (any bench mailbox, the bench password), logging each message."""

    def __init__(self, log_path: Path) -> None:
        import trustme
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult, LoginPassword

        self.ca = trustme.CA()
        cert = self.ca.issue_cert("localhost", "127.0.0.1")
        self.ca_file = Path(tempfile.mkdtemp()) / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        import ssl

        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(tls)
        self.log = log_path.open("w")
        self.lock = threading.Lock()
        self.count = 0
        sink = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                from email import message_from_bytes

                headers = message_from_bytes(envelope.original_content or b"")
                login = (
                    session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None
                )
                with sink.lock:
                    sink.count += 1
                    sink.log.write(
                        json.dumps(
                            {
                                "t": time.time(),
                                "login": login,
                                "from": envelope.mail_from,
                                "to": envelope.rcpt_tos,
                                "messageId": headers["Message-ID"],
                                "subject": headers["Subject"],
                                "inReplyTo": headers["In-Reply-To"],
                            }
                        )
                        + "\n"
                    )
                return "250 OK"

        def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
            good = isinstance(data, LoginPassword) and data.password.decode() == PASSWORD
            return (
                AuthResult(success=True, auth_data=data) if good else AuthResult(success=False, handled=False)
            )

        from tests.mail_servers import free_port

        self.port = free_port()
        self.controller = Controller(
            Handler(),
            hostname="127.0.0.1",
            port=self.port,
            server_hostname="localhost",
            tls_context=tls,
            require_starttls=True,
            authenticator=authenticate,
            auth_require_tls=True,
        )

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        self.log.close()


async def sink_run(rt: Runtime, seconds: float) -> int:
    from workers import sender

    deadline = time.monotonic() + seconds
    handled = 0
    while time.monotonic() < deadline:
        n = await sender.tick(rt)
        handled += n
        if n == 0:
            await asyncio.sleep(1.0)
    return handled


async def warm_up(rt: Runtime) -> None:
    """Warmup on for every mailbox (issue 32 item 1, docs/warmup.md), and one warmup pass claiming an email
    for each: the sender's passes then run with warmup rows, warmup emails and warmup-counted daily sends."""
    from outreach_core.kernel.db.tables import warmup_mailboxes
    from outreach_core.warmup.pool import plan_and_claim

    today = datetime.now(UTC).date().isoformat()
    async with rt.engine.begin() as conn:
        rows = (
            await conn.execute(mailboxes.select().with_only_columns(mailboxes.c.id, mailboxes.c.workspace_id))
        ).all()
        await conn.execute(warmup_mailboxes.delete())  # --reuse of a database an earlier --warmup run filled
        await conn.execute(
            warmup_mailboxes.insert(),
            [
                {"mailbox_id": r.id, "workspace_id": r.workspace_id, "enabled": True, "started_on": today}
                for r in rows
            ],
        )
    await rt.system(plan_and_claim, limit=len(rows))  # plans the day
    async with rt.engine.begin() as conn:
        await conn.execute(warmup_mailboxes.update().values(next_at=None))
    t0 = time.perf_counter()
    claimed = await rt.system(plan_and_claim, limit=len(rows))
    print(
        f"warmup: {len(claimed.jobs):,} warmup emails claimed in {(time.perf_counter() - t0) * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mailboxes", type=int, default=1000)
    parser.add_argument("--leads", type=int, default=1_000_000)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--sink-seconds", type=float, default=0)
    parser.add_argument("--sink-log", default="sender-sink.jsonl")
    parser.add_argument("--min-gap", type=int, default=30)
    parser.add_argument("--max-gap", type=int, default=60)
    parser.add_argument("--daily-limit", type=int, default=500, help="with --reuse: every mailbox's limit")
    parser.add_argument(
        "--window", default="0-1440", help="with --reuse: every campaign's window, minutes START-END"
    )
    parser.add_argument(
        "--warmup",
        action="store_true",
        help="warmup on for every mailbox (issue 32): one warmup pass claims an email each before the timing",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="use the database an earlier run seeded (OUTREACH_DATABASE_URL); --passes 0: sink run only",
    )
    args = parser.parse_args()
    logging.getLogger("mail.log").setLevel(logging.ERROR)  # aiosmtpd warns about its own API per message
    url = os.environ.get("OUTREACH_DATABASE_URL") or (
        f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='sender-bench-')}/outreach.db"
    )
    sink = Sink(Path(args.sink_log))
    settings = Settings(
        database_url=url,
        secret_key=os.environ.get("OUTREACH_SECRET_KEY", "bench-secret"),
        tls_ca_file=str(sink.ca_file),
        allow_private_urls=True,
        sender_idle_nap_s=0,
    )

    async def run() -> None:
        from outreach_app.bootstrap import build_runtime

        rt = build_runtime(settings)
        if url.startswith("postgresql") and not args.reuse:
            async with rt.engine.begin() as conn:
                await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
                await conn.execute(text("CREATE SCHEMA public"))
        await migrate(rt.engine)
        engine = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
        if args.reuse:
            await undo_timing_claims(rt)  # an earlier run's claims would be recovered in the timed passes
            async with rt.engine.connect() as conn:
                await conn.execution_options(isolation_level="AUTOCOMMIT")
                for table in ("sends", "campaign_leads", "mailboxes"):
                    await conn.execute(
                        text(f"VACUUM ANALYZE {table}" if engine == "PostgreSQL" else "ANALYZE")
                    )
            start, end = (int(x) for x in args.window.split("-"))
            async with rt.engine.begin() as conn:
                await conn.execute(
                    mailboxes.update().values(
                        smtp_port=sink.port,
                        next_send_at=None,
                        min_gap_s=args.min_gap,
                        max_gap_s=args.max_gap,
                        daily_limit=args.daily_limit,
                    )
                )
                await conn.execute(campaigns.update().values(window_start=start, window_end=end))
        t0 = time.perf_counter()
        if not args.reuse:
            await seed(rt, args.mailboxes, args.leads, "127.0.0.1", sink.port, (args.min_gap, args.max_gap))
        print(
            f"{engine}: seeded {args.mailboxes:,} mailboxes, {args.leads:,} campaign leads in "
            f"{time.perf_counter() - t0:.0f} s"
        )
        if args.warmup:
            await warm_up(rt)
        timings = await time_passes(rt, args.passes)
        secs = [t for t, _, _ in timings] or [0.0]
        cpus = [c for _, _, c in timings] or [0.0]
        if timings:
            print(
                f"| {engine} | {args.mailboxes:,} | {args.leads:,} | {timings[0][1]} | "
                f"{statistics.median(secs) * 1000:.0f} | {max(secs) * 1000:.0f} | "
                f"{statistics.median(cpus) * 1000:.0f} | {max(cpus) * 1000:.0f} | "
                f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())} |"
            )
            print("(wall median ms | wall max ms | CPU median ms | CPU max ms | load average 1/5/15 min)")
        if args.sink_seconds > 0:
            if timings:
                await undo_timing_claims(rt)
            sink.start()
            t0 = time.perf_counter()
            await sink_run(rt, args.sink_seconds)
            elapsed = time.perf_counter() - t0
            sink.stop()
            print(
                f"sink run: {sink.count:,} emails in {elapsed:.0f} s ({sink.count / elapsed:.1f}/s); "
                f"log {args.sink_log}; check with bench/check_sink.py"
            )
        await rt.dispose()

    asyncio.run(run())


if __name__ == "__main__":
    main()
