"""The operations routes of real processes: `outreach serve` answers for the workers of the worker process it
started, and each `outreach worker --port N` serves its own health, readiness and metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from outreach_core.kernel.settings import Settings
from tests.conftest import free_port
from tests.test_cli import OUTREACH, ROOT, _env
from tests.test_serve import worker_children


@contextmanager
def process(settings: Settings, *args: str, **env: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [*OUTREACH, *args],
        env=_env(settings, **env),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # never read: a pipe would fill and block the server mid-write
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_ready(base: str, deadline_s: float = 120) -> dict[str, Any]:  # a loaded machine starts slowly
    deadline = time.monotonic() + deadline_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = httpx.get(f"{base}/readyz", timeout=5)
            if last.status_code == 200:
                return dict(last.json())
        except httpx.TransportError as exc:
            last = exc
        time.sleep(0.2)
    raise AssertionError(f"not ready within {deadline_s} s: {getattr(last, 'text', last)}")


def test_serve_is_ready_with_its_worker_process_and_reports_its_ticks(
    runtime: Any, settings: Settings
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with process(settings, "serve", "--port", str(port)) as proc:
        ready = wait_ready(base)
        assert {"usage", "sender", "import", "webhooks", "inbox"} <= set(ready["workers"])
        metrics = httpx.get(f"{base}/metrics", timeout=5).text
        assert 'outreach_worker_ticks_total{worker="sender"}' in metrics
        assert 'outreach_worker_ticks_total{worker="usage"}' in metrics
        assert 'outreach_worker_ticks_total{worker="import"}' in metrics  # from the import child
        for child in ("import", "others"):
            assert f'outreach_worker_process_up{{child="{child}"}} 1.0' in metrics, metrics
            assert f'outreach_worker_process_restarts_total{{child="{child}"}} 0.0' in metrics
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0


def test_serve_without_one_of_its_worker_processes_is_not_ready(
    runtime: Any, settings: Settings, tmp_path: Path
) -> None:
    """Either worker process stops (SIGSTOP: alive, but neither ticking nor reporting): readiness says so,
    naming that child, and is back once it runs again. On a database of its own: the session's, filled by
    every other test, gives its workers minutes of work (hundreds of mailboxes to read) after the stop."""
    own = settings.model_copy(update={"database_url": f"sqlite+aiosqlite:///{tmp_path / 'ready.db'}"})
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with process(own, "serve", "--port", str(port)) as server:
        wait_ready(base)
        for kind, child in worker_children(server.pid).items():
            os.kill(child, signal.SIGSTOP)  # alive but no longer ticking or reporting
            try:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    answer = httpx.get(f"{base}/readyz", timeout=5)
                    if answer.status_code == 503 and any(
                        r.startswith(f"worker process {kind}:") for r in answer.json()["reasons"]
                    ):
                        break
                    time.sleep(0.5)
                assert answer.status_code == 503, answer.text
                reasons = answer.json()["reasons"]
                # the stopped workers' last ticks age past their limits, then the status itself goes stale
                assert all(r.startswith("worker ") for r in reasons), answer.text
                assert any(r.startswith(f"worker process {kind}:") for r in reasons), answer.text
                other = "others" if kind == "import" else "import"
                assert not any(r.startswith(f"worker process {other}:") for r in reasons), answer.text
                metrics = httpx.get(f"{base}/metrics", timeout=5).text
                assert f'outreach_worker_process_up{{child="{kind}"}} 0.0' in metrics
                assert f'outreach_worker_process_up{{child="{other}"}} 1.0' in metrics
            finally:
                os.kill(child, signal.SIGCONT)
            wait_ready(base)


def _pid_of_server(port: int) -> int:
    out = subprocess.run(
        ["pgrep", "-f", f"outreach_app.cli serve --port {port}"], capture_output=True, text=True
    )
    return int(out.stdout.split()[0])


def test_a_worker_process_serves_its_own_health_and_metrics(runtime: Any, settings: Settings) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with process(settings, "worker", "--only", "import,billing", "--port", str(port)) as proc:
        assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200 if wait_ready(base) else False
        assert sorted(wait_ready(base)["workers"]) == ["billing", "import"]
        metrics = httpx.get(f"{base}/metrics", timeout=5).text
        assert 'outreach_worker_ticks_total{worker="import"}' in metrics
        assert "outreach_queue_depth" in metrics
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
