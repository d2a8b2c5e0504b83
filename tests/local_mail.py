"""A local mail setup for trying the service by hand: one mailbox on an SMTP server and an IMAP server on
loopback, with certificates from a throw-away CA. The same servers the tests use (`tests/mail_servers.py`):
aiosmtpd with STARTTLS and AUTH, Dovecot with implicit TLS. Dovecot must be installed and is started as
root, so run it with sudo:

    sudo .venv/bin/python -m tests.local_mail [--dir /tmp/outreach-local-mail] [--smtp-port 2525]
        [--imap-port 1993] [--user me@mail.test] [--password local-password]

It prints the settings and a ready `POST /api/v1/mailboxes` body (also written to `mailbox.json`, beside the
CA file), then one line per email the SMTP server accepts, each saved as `received/<n>.eml`. An email to the
local mailbox's own address is also put into its IMAP INBOX, so a reply sent through this SMTP server (by
hand, from a mail client or with curl) reaches the service's inbox worker as a real reply would. Ctrl-C
stops it. `make dev-mail` runs it (with sudo when not root).
The service must trust the CA and allow loopback mail hosts:

    OUTREACH_ALLOW_PRIVATE_URLS=1 OUTREACH_TLS_CA_FILE=<dir>/ca.pem make serve
"""

from __future__ import annotations

import argparse
import email
import email.policy
import imaplib
import itertools
import json
import shutil
import signal
import ssl
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.mail_servers import Dovecot, MailCA, Received, SmtpServer, Users

READY = "Local mail is ready."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.local_mail", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/outreach-local-mail"))
    parser.add_argument("--smtp-port", type=int, default=2525)
    parser.add_argument("--imap-port", type=int, default=1993)
    parser.add_argument("--user", default="me@mail.test")
    parser.add_argument("--password", default="local-password")
    args = parser.parse_args(argv)

    problem = Dovecot.problem()
    if problem is not None:
        print(f"Cannot start the IMAP server: {problem}. Run this with sudo.", file=sys.stderr)
        return 1
    root: Path = args.dir.resolve()
    for stale in ("dovecot", "received"):
        shutil.rmtree(root / stale, ignore_errors=True)
    ca = MailCA(root)
    users = Users()
    users.add(args.user, args.password)
    received_dir = root / "received"
    received_dir.mkdir(parents=True)
    received_dir.chmod(0o755)
    numbers = itertools.count(1)

    def save(message: Received) -> None:
        n = next(numbers)
        (received_dir / f"{n}.eml").write_bytes(message.data)
        parsed = email.message_from_bytes(message.data, policy=email.policy.default)
        print(
            f"received {n}.eml: {message.mail_from} -> {', '.join(message.rcpt_tos)}: {parsed['Subject']}",
            flush=True,
        )
        for recipient in message.rcpt_tos:
            if recipient.lower() == args.user.lower():
                deliver(recipient, message.data)

    def deliver(user: str, data: bytes) -> None:
        """Into the local mailbox's INBOX, as its mail server would deliver it (IMAP APPEND as the user)."""
        try:
            with imaplib.IMAP4_SSL(
                imap.host, imap.tls_port, ssl_context=ssl.create_default_context(cafile=str(ca.ca_file))
            ) as client:
                client.login(user, args.password)
                client.append("INBOX", "", imaplib.Time2Internaldate(time.time()), data)
            print(f"  delivered to the INBOX of {user}", flush=True)
        except (OSError, imaplib.IMAP4.error) as exc:
            print(f"  could not deliver to the INBOX of {user}: {exc}", flush=True)

    smtp = SmtpServer("starttls", ca, users, port=args.smtp_port)
    smtp.on_message = save
    imap = Dovecot(root / "dovecot", ca, users, tls_port=args.imap_port)
    mailbox: dict[str, Any] = {
        "provider": "smtp",
        "email": args.user,
        "password": args.password,
        "smtp": {"host": smtp.host, "port": smtp.port, "security": "starttls", "user": args.user},
        "imap": {"host": imap.host, "port": imap.tls_port, "security": "tls", "user": args.user},
    }
    (root / "mailbox.json").write_text(json.dumps(mailbox, indent=2) + "\n")
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    smtp.start()
    try:
        imap.start()
        try:
            print(
                f"Mailbox {args.user}, password {args.password}\n"
                f"  SMTP {smtp.host}:{smtp.port} (STARTTLS), IMAP {imap.host}:{imap.tls_port} (TLS)\n"
                f"  CA file {ca.ca_file}\n"
                f"  POST /api/v1/mailboxes body ({root / 'mailbox.json'}):\n{json.dumps(mailbox)}\n"
                f"Serve with: OUTREACH_ALLOW_PRIVATE_URLS=1 OUTREACH_TLS_CA_FILE={ca.ca_file} make serve\n"
                f"Emails received are saved in {received_dir}/. Ctrl-C stops.\n{READY}",
                flush=True,
            )
            stop.wait()
        finally:
            imap.stop()
    finally:
        smtp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
