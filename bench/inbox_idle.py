"""The inbox worker at scale: N mailboxes (Dovecot users) held in IDLE by one worker process.

1. Starts its own Dovecot (root needed, as for the tests) with a configuration for many connections: one imap
   process per connection (up to 1,100), imap-login in high-performance mode (`service_count = 0`,
   `client_limit` 2000), `default_client_limit` 5000, `mail_max_userip_connections` 20.
2. Seeds a database (OUTREACH_DATABASE_URL, default a fresh SQLite file): one workspace, N mailboxes on that
   Dovecot, and `--replies` leads.
3. Starts the worker as users run it, `outreach worker --only inbox` in its own process (configured through
   the environment), and waits until every mailbox has synced once (`lastSyncedAt` set; each task goes to
   IDLE right after its first sync) and one TCP connection per mailbox is ESTABLISHED to Dovecot's port
   (/proc/net/tcp); reports how long that took and the worker process's RSS.
4. Sends `--replies` unsubscribe requests ("please remove me") from the leads, APPENDed one at a time to
   random mailboxes' INBOX (as a delivery agent would), and measures how long each takes to become a
   labelled thread (rules) in the database: p50/p95/max.

    sudo .venv/bin/python bench/inbox_idle.py [--mailboxes 1000] [--replies 100]
"""

from __future__ import annotations

import argparse
import asyncio
import imaplib
import os
import random
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import func, select

from outreach_core.kernel.context import SystemContext
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.db.tables import mailboxes, threads
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.workspace.setup import init_workspace
from tests import mail_servers
from tests.campaigns.helpers import add_lead
from tests.conftest import WorkspaceHandle
from tests.mailboxes.helpers import seed_mailbox

_SCALE = """\
default_client_limit = 5000
# Every imap process runs as the same system user here, and Linux gives one user 128 inotify instances
# (fs.inotify.max_user_instances): the processes beyond that learn of new mail by checking the maildir every
# `mailbox_idle_check_interval` (30 s by default), so it is 1 s in this bench.
mailbox_idle_check_interval = 1 secs
default_process_limit = 2000
mail_max_userip_connections = 20
service imap {{
  client_limit = 1
  process_limit = 1100
}}
"""  # a template: braces doubled


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def established_to(port: int) -> int:
    """ESTABLISHED TCP connections whose remote port is `port` (IPv4, /proc/net/tcp)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state = fields[2], fields[3]
        if state == "01" and int(remote.split(":")[1], 16) == port:
            count += 1
    return count


def unsubscribe_request(sender: str, to: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = "Re: a quick question"
    msg["Message-ID"] = make_msgid(domain="lead.example")
    msg.set_content("Please remove me from your mailing list.\n")
    return msg.as_bytes().replace(b"\n", b"\r\n")


def append(ca_file: str, port: int, user: str, password: str, raw: bytes) -> None:
    context = ssl.create_default_context(cafile=ca_file)
    client = imaplib.IMAP4_SSL(mail_servers.HOST, port, ssl_context=context)
    try:
        client.login(user, password)
        status, _ = client.append("INBOX", "", imaplib.Time2Internaldate(time.time()), raw)
        assert status == "OK"
    finally:
        client.logout()


async def thread_count(runtime: Runtime) -> int:
    async def count(ctx: SystemContext) -> int:
        return int((await ctx.conn.execute(select(func.count()).select_from(threads))).scalar_one())

    return await runtime.system_read(count)


async def synced_mailboxes(runtime: Runtime) -> int:
    async def count(ctx: SystemContext) -> int:
        synced = select(func.count()).select_from(mailboxes).where(mailboxes.c.last_synced_at.is_not(None))
        return int((await ctx.conn.execute(synced)).scalar_one())

    return await runtime.system_read(count)


def start_worker(settings: Settings, root: Path) -> subprocess.Popen[bytes]:
    """`outreach worker --only inbox`, configured the way an operator would (environment variables)."""
    env = {
        **os.environ,
        "OUTREACH_DATABASE_URL": settings.database_url,
        "OUTREACH_SECRET_KEY": str(settings.secret_key),
        "OUTREACH_TLS_CA_FILE": str(settings.tls_ca_file),
        "OUTREACH_ALLOW_PRIVATE_URLS": "1",
        "OUTREACH_INBOX_POLL_S": str(settings.inbox_poll_s),
        "OUTREACH_INBOX_TIMEOUT_S": str(settings.inbox_timeout_s),
        "OUTREACH_INBOX_MAX_MAILBOXES": str(settings.inbox_max_mailboxes),
        "OUTREACH_LOG_LEVEL": "WARNING",
    }
    log = (root / "worker.log").open("wb")
    outreach = Path(sys.executable).with_name("outreach")
    return subprocess.Popen([str(outreach), "worker", "--only", "inbox"], env=env, stdout=log, stderr=log)


async def main(args: argparse.Namespace) -> None:
    problem = mail_servers.Dovecot.problem()
    if problem:
        sys.exit(problem)
    root = Path(tempfile.mkdtemp(prefix="outreach-bench-inbox-"))
    root.chmod(0o755)  # noqa: ASYNC240 (set-up before anything runs)
    ca = mail_servers.MailCA(root / "ca")
    users = mail_servers.Users()
    boxes = [(f"bench{i}@mail.test", f"pw-bench-{i}-S3cret") for i in range(args.mailboxes)]
    for user, password in boxes:
        users.passwords[user] = password
    # this bench's own configuration: login processes serving many clients each (high-performance mode)
    mail_servers._DOVECOT_CONF = (
        mail_servers._DOVECOT_CONF.replace(
            "service imap-login {{\n",
            "service imap-login {{\n  service_count = 0\n  client_limit = 2000\n  process_min_avail = 4\n",
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
        inbox_poll_s=300.0,
        inbox_timeout_s=60.0,
        inbox_max_mailboxes=args.mailboxes,
        log_json=False,
    )
    runtime = Runtime(settings)
    worker: subprocess.Popen[bytes] | None = None
    try:
        await migrate(runtime.engine)
        made = await runtime.system(
            init_workspace, email="bench@example.com", name="Bench", workspace="Bench", plan="agency"
        )
        ws = WorkspaceHandle(runtime, made.apiKey, made.workspaceId, made.userId, made.slug, "owner", "")
        started = time.monotonic()
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
        leads = [f"lead{i}@lead{i}.example" for i in range(args.replies)]
        for email in leads:
            await add_lead(ws, email)
        print(f"seeded {len(boxes)} mailboxes and {len(leads)} leads in {time.monotonic() - started:.1f} s")

        worker = start_worker(settings, root)
        await asyncio.sleep(1.0)
        rss_before = rss_mb(worker.pid)
        started = time.monotonic()
        while (synced := await synced_mailboxes(runtime)) < len(boxes) or established_to(
            dovecot.tls_port
        ) < len(boxes):
            if time.monotonic() - started > args.connect_timeout or worker.poll() is not None:
                break
            await asyncio.sleep(0.2)
        took = time.monotonic() - started
        await asyncio.sleep(2)
        print(
            f"{synced}/{len(boxes)} mailboxes synced and in IDLE after {took:.1f} s; ESTABLISHED to Dovecot "
            f"{established_to(dovecot.tls_port)}; worker RSS {rss_before:.0f} MB at start, "
            f"{rss_mb(worker.pid):.0f} MB with them"
        )

        latencies: list[float] = []
        rng = random.Random(7)
        for email in leads:
            user, password = rng.choice(boxes)
            before = await thread_count(runtime)
            raw = unsubscribe_request(email, user)
            await asyncio.to_thread(append, str(ca.ca_file), dovecot.tls_port, user, password, raw)
            appended = time.monotonic()
            while await thread_count(runtime) == before:
                if time.monotonic() - appended > 30:
                    print(f"no thread after 30 s for {email} (mailbox {user})")
                    break
                await asyncio.sleep(0.02)
            latencies.append(time.monotonic() - appended)
        if latencies:
            latencies.sort()
            p95 = latencies[max(0, int(len(latencies) * 0.95) - 1)]
            print(
                f"reply -> labelled thread over {len(latencies)} replies: p50 "
                f"{statistics.median(latencies) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max "
                f"{latencies[-1] * 1000:.0f} ms; ESTABLISHED to Dovecot {established_to(dovecot.tls_port)}; "
                f"worker RSS {rss_mb(worker.pid):.0f} MB"
            )
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
    parser.add_argument("--mailboxes", type=int, default=1000)
    parser.add_argument("--replies", type=int, default=100)
    parser.add_argument("--connect-timeout", type=float, default=300.0)
    return parser.parse_args()


def _main() -> Any:
    return asyncio.run(main(parse_args()))


if __name__ == "__main__":
    _main()
