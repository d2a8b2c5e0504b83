"""The secret key generated beside a SQLite database when OUTREACH_SECRET_KEY is not set: processes that
start together on a new database end with one key, and a process reads it once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from outreach_core.kernel import crypto
from outreach_core.kernel.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 10  # new databases
PROCESSES = 4  # processes starting together on each
KEY_FILE_NAME = ".outreach-secret-key"  # the name README gives

# Processes of the service starting together on new databases. A starter (its imports done once, so the
# processes it forks reach the key at the same moment) forks PROCESSES processes per database; each waits at
# the barrier (a shared lock the starter holds exclusively, released for all at once), then stores a mailbox
# password the way create_mailbox does and leaves what it stored in a file.
STARTER = """
import fcntl, os, sys
from pathlib import Path
from outreach_core.kernel import crypto
from outreach_core.kernel.settings import Settings

root, rounds, processes = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for r in range(rounds):
    database = root / f"db{r}" / "outreach.db"
    barrier = root / f"barrier{r}"
    barrier.touch()
    with barrier.open() as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        pids = []
        for n in range(processes):
            pid = os.fork()
            if pid == 0:
                settings = Settings(database_url=f"sqlite+aiosqlite:///{database}")
                with barrier.open() as waiting:
                    fcntl.flock(waiting, fcntl.LOCK_SH)
                token = crypto.encrypt(settings, f"password-{n}")
                (root / f"stored{r}-{n}").write_text(token)
                os._exit(0)
            pids.append(pid)
        fcntl.flock(held, fcntl.LOCK_UN)  # every process goes at once
    for pid in pids:
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
"""


def test_processes_starting_together_on_a_new_database_end_with_one_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTREACH_")}
    started = subprocess.run(
        [sys.executable, "-c", STARTER, str(tmp_path), str(ROUNDS), str(PROCESSES)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode == 0, started.stderr

    for r in range(ROUNDS):
        directory = tmp_path / f"db{r}"
        # one key file, nothing else left beside the database, readable by its owner only
        assert sorted(p.name for p in directory.iterdir()) == [KEY_FILE_NAME]
        key_file = directory / KEY_FILE_NAME
        assert key_file.stat().st_mode & 0o777 == 0o600
        # every password any of the processes stored decrypts with that key (as a later restart reads it)
        restarted = Settings(database_url=f"sqlite+aiosqlite:///{directory / 'outreach.db'}")
        restarted = restarted.model_copy(update={"secret_key": key_file.read_text()})
        stored = [(tmp_path / f"stored{r}-{n}").read_text() for n in range(PROCESSES)]
        assert [crypto.decrypt(restarted, token) for token in stored] == [
            f"password-{n}" for n in range(PROCESSES)
        ], f"database {r}"


def test_a_process_reads_the_generated_key_once_and_keeps_it(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'outreach.db'}"
    settings = Settings(database_url=url)
    key = settings.resolved_secret_key()
    key_file = tmp_path / KEY_FILE_NAME
    assert key_file.read_text() == key and len(key) >= 43

    # the file is not read again: what this process signed and encrypted stays readable to it until it
    # restarts, even if the file is replaced under it
    key_file.write_text("replaced-while-running")
    token = crypto.encrypt(settings, "secret")
    assert settings.resolved_secret_key() == Settings(database_url=url).resolved_secret_key() == key
    assert crypto.decrypt(Settings(database_url=url, secret_key=key), token) == "secret"
