"""A real `outreach serve` for the benchmarks (`--no-workers` unless asked for them), with one workspace
and its API key."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Served:
    base: str
    key: str
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None

    @property
    def engine(self) -> str:
        return "PostgreSQL" if self.env["OUTREACH_DATABASE_URL"].startswith("postgresql") else "SQLite"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(*, plan: str, workers: bool = False, env_extra: dict[str, str] | None = None) -> Iterator[Served]:
    """Start the server on a free port against OUTREACH_DATABASE_URL (default: a fresh SQLite file), create a
    workspace on `plan`, and stop the server (its whole process group) afterwards. `workers` runs every
    worker in the server process, as `outreach serve` does by default."""
    env = {**os.environ, **(env_extra or {})}
    env.setdefault(
        "OUTREACH_DATABASE_URL", f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='outreach-bench-')}/b.db"
    )
    env.setdefault("OUTREACH_SECRET_KEY", "bench-secret")
    env.update(
        OUTREACH_RATE_LIMIT_PER_MINUTE="100000000",
        OUTREACH_RATE_LIMIT_BURST="100000000",
        OUTREACH_LOG_LEVEL="WARNING",
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env["OUTREACH_PUBLIC_URL"] = base
    stamp = f"{int(time.time())}-{os.getpid()}"
    command = ["init", "--email", f"bench{stamp}@example.com", "--name", "Bench", "--workspace", "Bench"]
    command += ["--slug", f"bench-{stamp}", "--plan", plan]
    init = subprocess.run(
        [sys.executable, "-m", "outreach_app.cli", *command],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    key = json.loads(init.stdout)["apiKey"]
    # BENCH_SERVER_LOG=path keeps the server's output (warnings and errors), for a run that went wrong
    log_path = os.environ.get("BENCH_SERVER_LOG")
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
    server = subprocess.Popen(
        [sys.executable, "-m", "outreach_app.cli", "serve", "--port", str(port)]
        + ([] if workers else ["--no-workers"]),
        env=env, cwd=ROOT, stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts slowly
        while True:
            try:
                httpx.get(f"{base}/api/v1/ping", timeout=1).raise_for_status()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.1)
        yield Served(base, key, env, server)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=30)
