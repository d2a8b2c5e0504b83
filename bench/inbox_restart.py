"""The inbox worker after a restart, measured from outside (issue 25.9): from `outreach worker --only inbox`
(or `outreach serve`) starting to each reply that arrived while it was down becoming a thread, on a real
Dovecot.

1. Starts its own Dovecot (root needed, as for the tests; the configuration of `bench/inbox_idle.py` above
   100 mailboxes) and seeds a database (OUTREACH_DATABASE_URL, default a fresh SQLite file): one workspace,
   `--mailboxes` mailboxes on that Dovecot, one lead per reply.
2. Starts the worker as users run it (configured through the environment, `OUTREACH_INBOX_POLL_S` =
   `--poll`), waits until every mailbox has synced once, and measures one reply (APPEND -> thread).
3. `--rounds` times: stops the worker (SIGTERM as systemd and `docker stop` do, or SIGKILL with `--stop
   kill`, a crash), APPENDs `--replies` replies to as many random mailboxes while it is down, starts it again
   and measures from the process start to each reply's thread (first, p50, p95, last), then one more reply
   APPENDed while the restarted worker runs. The worker process's CPU (user + system, /proc) is printed too.

    sudo .venv/bin/python bench/inbox_restart.py [--mailboxes 1000] [--replies 50] [--rounds 2] [--poll 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from bench.inbox_idle import _SCALE, append, synced_mailboxes, thread_count, unsubscribe_request
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.workspace.setup import init_workspace
from tests import mail_servers
from tests.campaigns.helpers import add_lead
from tests.conftest import WorkspaceHandle
from tests.mailboxes.helpers import seed_mailbox

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (/proc/PID/stat), children excluded."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start_worker(settings: Settings, log: Path, how: str) -> subprocess.Popen[bytes]:
    """`outreach worker --only inbox` (or `outreach serve`), configured the way an operator would
    (environment variables)."""
    env = {
        **os.environ,
        "OUTREACH_DATABASE_URL": settings.database_url,
        "OUTREACH_SECRET_KEY": str(settings.secret_key),
        "OUTREACH_TLS_CA_FILE": str(settings.tls_ca_file),
        "OUTREACH_ALLOW_PRIVATE_URLS": "1",
        "OUTREACH_INBOX_POLL_S": str(settings.inbox_poll_s),
        "OUTREACH_LOG_LEVEL": "INFO",
    }
    out = log.open("ab")
    outreach = Path(sys.executable).with_name("outreach")
    if how == "serve":
        port = str(mail_servers.free_port())
        env["OUTREACH_PUBLIC_URL"] = f"http://127.0.0.1:{port}"
        command = [str(outreach), "serve", "--port", port]
    else:
        command = [str(outreach), "worker", "--only", "inbox"]
    return subprocess.Popen(command, env=env, stdout=out, stderr=out)


async def thread_times(
    runtime: Runtime, before: int, wanted: int, since: float, limit_s: float
) -> list[float]:
    """Seconds from `since` at which the thread count passed `before` + 1, + 2, ... + `wanted`."""
    times: list[float] = []
    while len(times) < wanted and time.monotonic() - since < limit_s:
        grown = await thread_count(runtime) - before
        times += [time.monotonic() - since] * (grown - len(times))
        await asyncio.sleep(0.05)
    return times


def summary(times: list[float], wanted: int) -> str:
    if not times:
        return f"0 of {wanted} threads"
    ordered = sorted(times)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return (
        f"{len(ordered)} of {wanted} threads: first {ordered[0]:.1f} s, "
        f"p50 {statistics.median(ordered):.1f} s, p95 {p95:.1f} s, last {ordered[-1]:.1f} s"
    )


async def main(args: argparse.Namespace) -> None:
    problem = mail_servers.Dovecot.problem()
    if problem:
        sys.exit(problem)
    root = Path(tempfile.mkdtemp(prefix="outreach-bench-restart-"))
    root.chmod(0o755)  # noqa: ASYNC240 (set-up before anything runs)
    ca = mail_servers.MailCA(root / "ca")
    users = mail_servers.Users()
    boxes = [(f"restart{i}@mail.test", f"pw-restart-{i}-S3cret") for i in range(args.mailboxes)]
    for user, password in boxes:
        users.passwords[user] = password
    if args.mailboxes > 100:  # the configuration of bench/inbox_idle.py for many connections
        mail_servers._DOVECOT_CONF = (
            mail_servers._DOVECOT_CONF.replace(
                "service imap-login {{\n",
                "service imap-login {{\n  service_count = 0\n  client_limit = 2000\n"
                "  process_min_avail = 4\n",
            )
            + _SCALE
        )
    dovecot = mail_servers.Dovecot(root / "dovecot", ca, users)
    dovecot.start()
    url = os.environ.get("OUTREACH_DATABASE_URL") or f"sqlite+aiosqlite:///{root / 'bench.db'}"
    settings = Settings(
        database_url=url,
        secret_key="bench-secret-key",
        tls_ca_file=str(ca.ca_file),
        allow_private_urls=True,
        inbox_poll_s=args.poll,
        inbox_max_mailboxes=max(1000, args.mailboxes),
        log_json=False,
    )
    runtime = Runtime(settings)
    log = root / "worker.log"
    worker: subprocess.Popen[bytes] | None = None
    rng = random.Random(7)
    try:
        await migrate(runtime.engine)
        made = await runtime.system(
            init_workspace, email="bench@example.com", name="Bench", workspace="Bench", plan="agency"
        )
        ws = WorkspaceHandle(runtime, made.apiKey, made.workspaceId, made.userId, made.slug, "owner", "")
        for user, password in boxes:
            await seed_mailbox(
                ws,
                user,
                password=password,
                imap_host=mail_servers.HOST,
                imap_port=dovecot.tls_port,
                imap_security="tls",
                imap_user=user,
            )
        per_round = min(args.replies, len(boxes))
        emails = [f"lead{n}@lead{n}.example" for n in range(1 + args.rounds * (per_round + 1))]
        for email in emails:
            await add_lead(ws, email)
        leads = iter(emails)

        async def replies(count: int) -> int:
            """Replies from new leads APPENDed to `count` random mailboxes; the thread count before."""
            before = await thread_count(runtime)
            for user, password in rng.sample(boxes, count):
                raw = unsubscribe_request(next(leads), user)
                await asyncio.to_thread(append, str(ca.ca_file), dovecot.tls_port, user, password, raw)
            return before

        worker = start_worker(settings, log, args.how)
        started = time.monotonic()
        while await synced_mailboxes(runtime) < len(boxes) and time.monotonic() - started < args.limit:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        print(
            f"first start ({args.how}, {url.split(':')[0]}, poll {args.poll:g} s): "
            f"{await synced_mailboxes(runtime)} of {len(boxes)} mailboxes synced "
            f"{time.monotonic() - started:.1f} s after the process started"
        )
        before = await replies(1)
        appended = time.monotonic()
        print(f"warm: {summary(await thread_times(runtime, before, 1, appended, args.limit), 1)}")

        for n in range(args.rounds):
            worker.send_signal(signal.SIGKILL if args.stop == "kill" else signal.SIGTERM)
            stopping = time.monotonic()
            worker.wait(timeout=120)
            stopped = time.monotonic() - stopping
            before = await replies(per_round)  # they arrive while the worker is down
            worker = start_worker(settings, log, args.how)
            started = time.monotonic()
            times = await thread_times(runtime, before, per_round, started, args.limit)
            print(
                f"round {n + 1}: {args.stop} took {stopped:.2f} s; process start -> thread of each reply "
                f"that arrived while it was down: {summary(times, per_round)}; "
                f"worker CPU {cpu_s(worker.pid):.1f} s"
            )
            before = await replies(1)  # arrives while the restarted worker runs
            appended = time.monotonic()
            print(f"    then a reply -> {summary(await thread_times(runtime, before, 1, appended, 60), 1)}")
        print(f"log {log}")
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=60)
        await runtime.dispose()
        dovecot.stop()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mailboxes", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--replies", type=int, default=50, help="replies APPENDed while the worker is down")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds to wait for threads at most")
    parser.add_argument("--poll", type=float, default=5.0)
    parser.add_argument("--how", choices=("worker", "serve"), default="worker")
    parser.add_argument("--stop", choices=("term", "kill"), default="term")
    return parser.parse_args()


def _main() -> Any:
    return asyncio.run(main(parse_args()))


if __name__ == "__main__":
    _main()
