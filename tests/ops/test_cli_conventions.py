"""The command line as an operator meets it (issue 30, items 3 and 7): `--version`, `python -m outreach_app`,
choices in `--help`, database URLs as hosting providers write them, one-line refusals, logs readable on a
terminal and JSON otherwise, migration chatter only at DEBUG, settings from `./.env`."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from outreach_core.kernel.settings import Settings, normalise_database_url
from tests.conftest import PG_URL, free_port
from tests.test_cli import ROOT

MODULE = [sys.executable, "-m", "outreach_app"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTREACH_")}
    env.update(extra)
    return env


def cli(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MODULE, *args], env=clean_env(**env), cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_version_and_python_dash_m() -> None:
    done = cli("--version")
    assert done.returncode == 0 and done.stdout == f"outreach {version('outreach')}\n"
    helped = cli("--help")
    assert helped.returncode == 0
    assert "Usage: outreach " in helped.stdout
    for command in ("serve", "worker", "mcp", "init", "migrate", "settings"):
        assert command in helped.stdout


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        (("init", "--help"), "starter|growth|pro|scale|agency>"),
        (("plan", "set", "--help"), "starter|growth|pro|scale|agency|none"),
        (("plan", "set", "--help"), "month|year"),
        (("member", "add", "--help"), "owner|admin|member"),
        (("worker", "--help"), "sender"),
    ],
)
def test_help_lists_the_choices(args: tuple[str, ...], choices: str) -> None:
    done = cli(*args, COLUMNS="200")
    assert done.returncode == 0
    assert choices in " ".join(done.stdout.split())


def test_the_worker_names_of_help_are_the_registrys() -> None:
    from workers import WORKER_NAMES
    from workers.registry import ALL_WORKERS

    assert tuple(ALL_WORKERS) == WORKER_NAMES


def test_a_wrong_choice_is_refused_with_the_choices() -> None:
    done = cli("plan", "set", "--workspace", "w", "--plan", "platinum")
    assert done.returncode == 2
    assert "platinum" in done.stderr and "starter" in done.stderr


def test_database_urls_get_the_async_drivers() -> None:
    assert normalise_database_url("postgres://u:p@db:5432/out") == "postgresql+asyncpg://u:p@db:5432/out"
    assert (
        normalise_database_url("postgresql://u@db/out?ssl=require")
        == "postgresql+asyncpg://u@db/out?ssl=require"
    )
    assert normalise_database_url("sqlite:///./outreach.db") == "sqlite+aiosqlite:///./outreach.db"
    assert normalise_database_url("sqlite+aiosqlite:////abs.db") == "sqlite+aiosqlite:////abs.db"
    assert Settings(database_url="postgres://u@h/d").database_url == "postgresql+asyncpg://u@h/d"
    with pytest.raises(ValueError, match="unsupported database URL scheme 'mysql'"):
        normalise_database_url("mysql://u@h/d")


def test_plain_urls_work_end_to_end(settings: Settings, tmp_path: Path) -> None:
    file = tmp_path / "plain.db"
    done = cli("migrate", OUTREACH_DATABASE_URL=f"sqlite:///{file}")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "migrated\n" and file.exists()
    if settings.database_url.startswith("postgresql"):
        plain = (
            make_url(settings.database_url).set(drivername="postgres").render_as_string(hide_password=False)
        )
        done = cli("migrate", OUTREACH_DATABASE_URL=plain, OUTREACH_SECRET_KEY="k")
        assert done.returncode == 0 and done.stdout == "migrated\n", done.stderr


def test_a_bad_url_is_one_line_not_a_traceback() -> None:
    done = cli("migrate", OUTREACH_DATABASE_URL="mysql://u@h/d")
    assert done.returncode == 2
    assert done.stderr.startswith("outreach: OUTREACH_DATABASE_URL: unsupported database URL scheme 'mysql'")
    assert done.stderr.count("\n") == 1


def test_an_unreachable_database_is_one_line() -> None:
    closed = free_port()
    done = cli(
        "migrate", OUTREACH_DATABASE_URL=f"postgres://postgres@127.0.0.1:{closed}/x", OUTREACH_SECRET_KEY="k"
    )
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if not line.startswith("outreach: database ")]
    assert len(lines) == 1 and lines[0].startswith("outreach: cannot reach the database: "), done.stderr


def _first_log_line(stderr_fd: int) -> str:
    """Read `stderr_fd` until the worker's `workers_started` line."""
    buffer = b""
    deadline = time.monotonic() + 60
    while b"workers_started" not in buffer and time.monotonic() < deadline:
        ready, _, _ = select.select([stderr_fd], [], [], 1)
        if ready:
            try:
                chunk = os.read(stderr_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buffer += chunk
    text = buffer.decode(errors="replace").replace("\r\n", "\n")
    return next(line for line in text.splitlines() if "workers_started" in line)


def _worker_logs(settings: Settings, *, terminal: bool) -> str:
    env = clean_env(OUTREACH_DATABASE_URL=settings.database_url, OUTREACH_SECRET_KEY="k")
    if terminal:
        leader, follower = pty.openpty()
        proc = subprocess.Popen(
            [*MODULE, "worker", "--only", "usage"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=follower,
        )
        os.close(follower)
        fd = leader
    else:
        proc = subprocess.Popen(
            [*MODULE, "worker", "--only", "usage"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        fd = proc.stderr.fileno()
    try:
        return _first_log_line(fd)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        if terminal:
            os.close(fd)


def test_logs_are_json_in_a_pipe_and_readable_on_a_terminal(runtime: Any, settings: Settings) -> None:
    piped = json.loads(_worker_logs(settings, terminal=False))
    assert piped["event"] == "workers_started" and piped["level"] == "info"
    readable = _worker_logs(settings, terminal=True)
    assert not readable.startswith("{")
    assert "workers_started" in readable and "[info" in readable


def _serve_logs(tmp_path: Path, **env: str) -> str:
    """The server's log from its start to its stop, once `/healthz` answered. The log goes to a file: at
    DEBUG it outgrows a pipe's buffer before the server is up, and a pipe read only at the end blocked the
    server's next write, so it never answered and each run waited out the whole deadline (60 s)."""
    port = free_port()
    database = tmp_path / f"fresh-{port}.db"
    log = tmp_path / f"serve-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*MODULE, "serve", "--no-workers", "--port", str(port)],
            env=clean_env(OUTREACH_DATABASE_URL=f"sqlite:///{database}", **env),
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=out,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            healthy = False
            while not healthy and time.monotonic() < deadline:
                try:
                    healthy = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
                except httpx.TransportError:
                    time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
    assert healthy, f"the server did not answer /healthz within 60 s:\n{log.read_text()[-2000:]}"
    return log.read_text()


def test_migration_chatter_only_at_debug(tmp_path: Path) -> None:
    quiet = _serve_logs(tmp_path)
    assert "Running upgrade" not in quiet and "Context impl" not in quiet
    assert '"event": "database"' in quiet or '"event": "creating_database"' in quiet  # the server did log
    chatty = _serve_logs(tmp_path, OUTREACH_LOG_LEVEL="DEBUG")
    upgrade = next(json.loads(line) for line in chatty.splitlines() if "Running upgrade" in line)
    assert upgrade["level"] == "debug"


def test_settings_are_read_from_dot_env(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("# local settings\nOUTREACH_DATABASE_URL=sqlite:///./from-dotenv.db\n")
    done = cli("migrate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "from-dotenv.db").exists()
    done = cli("migrate", cwd=tmp_path, OUTREACH_DATABASE_URL="sqlite:///./from-environment.db")
    assert done.returncode == 0 and (tmp_path / "from-environment.db").exists()  # the environment wins


NO_PASSWD_ENTRY = """
import os, pwd, sys
def no_entry(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")
pwd.getpwuid = no_entry  # what a container run as an arbitrary uid has, with HOME unset below
from outreach_app.cli import main
sys.argv = ["outreach", *sys.argv[1:]]
main()
"""


@pytest.mark.skipif(not PG_URL, reason="with SQLite the key is generated and the state lives beside the file")
def test_a_postgresql_server_without_its_key_or_a_home_says_what_to_set_in_one_line() -> None:
    assert PG_URL is not None
    port = str(free_port())
    done = cli("serve", "--port", port, OUTREACH_DATABASE_URL=PG_URL)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == "outreach: OUTREACH_SECRET_KEY is required with PostgreSQL"
    assert "Traceback" not in done.stderr and "│" not in done.stderr

    env = clean_env(OUTREACH_DATABASE_URL=PG_URL, OUTREACH_SECRET_KEY="k")
    for name in ("HOME", "XDG_STATE_HOME"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", NO_PASSWD_ENTRY, "serve", "--port", port],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("outreach: no home directory for this user"), done.stderr
    assert "set XDG_STATE_HOME" in last and "Traceback" not in done.stderr


def test_oauth_endpoints_and_mail_servers_are_checked_at_start_up(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'o.db'}"
    done = cli("migrate", OUTREACH_DATABASE_URL=database, OUTREACH_GOOGLE_AUTH_BASE="accounts.example.com")
    assert done.returncode == 2
    assert done.stderr == (
        "outreach: OUTREACH_GOOGLE_AUTH_BASE: 'accounts.example.com' cannot be used: "
        "only http and https URLs are allowed\n"
    )
    done = cli("migrate", OUTREACH_DATABASE_URL=database, OUTREACH_OAUTH_IMAP="imap.example.com:993")
    assert done.returncode == 2
    assert done.stderr == (
        "outreach: OUTREACH_OAUTH_IMAP: 'imap.example.com:993' is not host:port:security "
        "(security tls or starttls)\n"
    )
    done = cli("migrate", OUTREACH_DATABASE_URL=database, OUTREACH_MICROSOFT_AUTH_BASE="http://127.0.0.1:9/")
    assert done.returncode == 0, done.stderr
