"""The README's walkthrough works when pasted: its bash blocks, taken from README.md, run with bash against
`outreach serve` (started with the settings the README's serve line gives) and the local mail setup
(`python -m tests.local_mail`, as the README starts it): the first email arrives at the SMTP server, and a
reply sent by hand through it becomes a thread.

The only changes made to the README's text are the addresses, so that the test can run beside anything
else on the machine: the served port for `127.0.0.1:8000`, free ports for the local mail's 2525 and 1993,
and a temporary directory for `/tmp/outreach-local-mail`. The served instance uses a fresh SQLite database
(the README's default) on either test engine, and the test DNS server (no lookups leave the machine).
"""

from __future__ import annotations

import email
import email.policy
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port
from tests.dns_server import DnsServer
from tests.local_mail import READY
from tests.mail_servers import Dovecot, missing

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
WALKTHROUGH = re.compile(r"<!-- walkthrough\b.*?-->(.*?)<!-- /walkthrough -->", re.DOTALL)
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```$", re.DOTALL | re.MULTILINE)
SERVE_LINE = re.compile(r"^((?:OUTREACH_\w+=\S+ )+)make serve$", re.MULTILINE)
LOCAL_MAIL_LINE = "sudo .venv/bin/python -m tests.local_mail"
DEFAULTS = {
    "server": "127.0.0.1:8000",
    "smtp": '"port": 2525',
    "imap": '"port": 1993',
    "smtp_url": "smtp://127.0.0.1:2525",
}
LOCAL_MAIL_DIR = "/tmp/outreach-local-mail"


def walkthrough(readme: str) -> str:
    """The walkthrough's bash blocks, in order, as one script."""
    found = WALKTHROUGH.search(readme)
    assert found is not None, "README.md has no <!-- walkthrough --> ... <!-- /walkthrough --> section"
    blocks = BASH_BLOCK.findall(found.group(1))
    assert len(blocks) >= 4, blocks
    return "\n".join(blocks)


def _wait_for(what: str, ready: object, timeout_s: float, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout_s
    while not (ready() if callable(ready) else ready):
        if process.poll() is not None:
            out = process.stdout.read() if process.stdout else ""
            raise AssertionError(f"{what} exited with {process.returncode}:\n{out}")
        assert time.monotonic() < deadline, f"{what} did not start in {timeout_s} s"
        time.sleep(0.1)


def _stop(process: subprocess.Popen[str]) -> str:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.stdout.read() if process.stdout else ""


@pytest.fixture
def local_mail(tmp_path: Path) -> Iterator[tuple[Path, int, int]]:
    """`python -m tests.local_mail` on free ports; yields (its directory, SMTP port, IMAP port)."""
    problem = Dovecot.problem()
    if problem is not None:
        missing(problem)
    directory = Path(f"/tmp/outreach-walkthrough-{os.getpid()}-{free_port()}")
    smtp_port, imap_port = free_port(), free_port()
    log = tmp_path / "local-mail.log"
    command = [sys.executable, "-m", "tests.local_mail", "--dir", str(directory)]
    command += ["--smtp-port", str(smtp_port), "--imap-port", str(imap_port)]
    with log.open("w+") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            _wait_for("the local mail setup", lambda: READY in log.read_text(), 30, process)
            yield directory, smtp_port, imap_port
        finally:
            _stop(process)
            shutil.rmtree(directory, ignore_errors=True)


def test_the_readme_walkthrough_sends_the_first_email(
    local_mail: tuple[Path, int, int], dns_server: DnsServer, tmp_path: Path
) -> None:
    readme = README.read_text()
    assert LOCAL_MAIL_LINE in readme
    script = walkthrough(readme)
    for default in DEFAULTS.values():
        assert default in script, f"the walkthrough no longer contains {default}: update this test"
    serve = SERVE_LINE.search(readme)
    assert serve is not None, "README.md has no `OUTREACH_...=... make serve` line for the local mail setup"
    directory, smtp_port, imap_port = local_mail
    port = free_port()
    script = (
        script.replace(DEFAULTS["server"], f"127.0.0.1:{port}")
        .replace(DEFAULTS["smtp"], f'"port": {smtp_port}')
        .replace(DEFAULTS["imap"], f'"port": {imap_port}')
        .replace(DEFAULTS["smtp_url"], f"smtp://127.0.0.1:{smtp_port}")
        .replace(LOCAL_MAIL_DIR, str(directory))
    )
    settings = dict(pair.split("=", 1) for pair in serve.group(1).split())
    assert set(settings) == {"OUTREACH_ALLOW_PRIVATE_URLS", "OUTREACH_TLS_CA_FILE"}
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "OUTREACH_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'outreach.db'}",
        "OUTREACH_DNS_NAMESERVERS": dns_server.nameservers,
        "OUTREACH_LOG_LEVEL": "WARNING",
    }
    served_env = {**env, **{k: v.replace(LOCAL_MAIL_DIR, str(directory)) for k, v in settings.items()}}
    outreach = str(ROOT / ".venv" / "bin" / "outreach")  # what the README's commands use
    server_log = tmp_path / "serve.log"
    with server_log.open("w+") as out:
        server = subprocess.Popen(
            [outreach, "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=tmp_path,
            env=served_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            _wait_for("outreach serve", lambda: _answers(f"http://127.0.0.1:{port}/api/v1/ping"), 60, server)
            keep = f'printf "%s\\n" "$KEY" "$CID" > {tmp_path}/vars'  # for the checks below
            ran = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", f"{script}\n{keep}"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            output = f"{ran.stdout}\n{ran.stderr}\n--- serve ---\n{server_log.read_text()}"
            assert ran.returncode == 0, output
            key, campaign_id = (tmp_path / "vars").read_text().split()
            first = directory / "received" / "1.eml"
            deadline = time.monotonic() + 60
            while not first.exists():
                assert time.monotonic() < deadline, f"no email arrived\n{output}"
                time.sleep(0.2)
            campaign = httpx.get(
                f"http://127.0.0.1:{port}/api/v1/campaigns/{campaign_id}",
                headers={"Authorization": f"Bearer {key}"},
            ).json()
        finally:
            _stop(server)
    assert campaign["status"] == "running", campaign
    message = email.message_from_bytes(first.read_bytes(), policy=email.policy.default)
    assert message["To"] == "ada@example.com" and message["Subject"] == "Quick question, Ada"
    assert message["From"].addresses[0].addr_spec == "me@mail.test"
    text = message.get_body(("plain",))
    assert text is not None and "A short note about Analytical Engines." in text.get_content()
    assert '"status": "running"' in ran.stdout  # what the launch answer showed the person
    # Ada's reply, sent by hand through the local SMTP server, became a thread and stopped her sequence
    assert '{"lead":"ada@example.com","kind":"reply"' in ran.stdout, output
    assert '{"email":"ada@example.com","status":"replied"}' in ran.stdout, output


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
