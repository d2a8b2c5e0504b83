"""`outreach serve` and `outreach worker` as processes: they serve, then stop cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import httpx
import pytest

from outreach_core.kernel.context import system_scope
from outreach_core.kernel.db.tables import api_keys
from outreach_core.kernel.settings import Settings
from tests.campaigns.helpers import ok
from tests.conftest import MakeWorkspace, free_port
from tests.test_cli import OUTREACH, ROOT, _env


def _log_file() -> IO[str]:
    """Where a long-running `outreach serve` writes its log: a file, not a pipe nobody reads until it exits
    (its workers' log lines would fill the pipe's 64 KB and block the server, and its children, mid-write)."""
    return tempfile.TemporaryFile("w+")


def _read_log(proc: subprocess.Popen[str], log: IO[str]) -> str:
    proc.wait(timeout=10)
    with log:
        log.seek(0)
        text = log.read()
    print(text[-6000:])  # pytest shows it when the test fails
    return text


def _wait_for(url: str, deadline_s: float = 30) -> httpx.Response:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return httpx.get(url, timeout=1)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


async def test_serve_answers_and_stops_gracefully(settings: Settings, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    configured = f"http://localhost:{port}"  # a configured public URL wins over the served address
    proc = subprocess.Popen(
        [*OUTREACH, "serve", "--port", str(port)],
        env=_env(settings, OUTREACH_PUBLIC_URL=configured),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=(log := _log_file()),
        text=True,
    )
    try:
        assert _wait_for(f"{base}/api/v1/ping").json()["ok"] is True
        me = httpx.get(f"{base}/api/v1/me", headers=ws.headers, timeout=5)
        assert me.status_code == 200 and me.headers["x-request-id"]
        metadata = httpx.get(f"{base}/.well-known/oauth-authorization-server", timeout=5).json()
        assert metadata["issuer"].rstrip("/") == configured
        openapi = httpx.get(f"{base}/api/v1/openapi.json", timeout=5).json()
        assert openapi["openapi"].startswith("3.1") and openapi["servers"] == [
            {"url": f"{configured}/api/v1"}
        ]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        stderr = _read_log(proc, log)
    assert "Traceback" not in stderr, stderr

    async def stored_last_used(ctx: Any) -> Any:
        t = system_scope(api_keys)
        return (
            await ctx.conn.execute(t.select(t.c.last_used_at).where(t.c.created_by == ws.user_id))
        ).scalar_one()

    # the process wrote the key's lastUsedAt when it stopped (final flush), not on every request
    assert await ws.runtime.system_read(stored_last_used) is not None


def test_worker_runs_until_sigterm(settings: Settings, runtime: Any) -> None:
    proc = subprocess.Popen(
        [*OUTREACH, "worker", "--only", "usage"],
        env=_env(settings),
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    # SIGTERM once the worker says it runs (its handlers are in place by then): a fixed pause raced a
    # start slowed by a busy machine, and the signal then killed the process before it could handle it
    assert proc.stderr is not None
    seen = []
    while "workers_started" not in (line := proc.stderr.readline()):
        assert line, "".join(seen)  # the process ended without starting its workers
        seen.append(line)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0


def test_worker_refuses_unknown_names(settings: Settings) -> None:
    done = subprocess.run(
        [*OUTREACH, "worker", "--only", "usage,teleport"],
        env=_env(settings),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "teleport" in done.stderr and "usage" in done.stderr


@contextmanager
def serving(settings: Settings, *args: str, **env: str) -> Iterator[subprocess.Popen[str]]:
    """`outreach serve ARGS` as a process (no OUTREACH_PUBLIC_URL unless given), stopped with SIGTERM."""
    proc = subprocess.Popen(
        [*OUTREACH, "serve", "--no-workers", *args],
        env=_env(settings, **env),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        _, stderr = proc.communicate(timeout=10)
    assert "Traceback" not in stderr, stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
async def test_public_url_follows_the_served_host_and_port(
    settings: Settings, make_workspace: MakeWorkspace, host: str
) -> None:
    """Without OUTREACH_PUBLIC_URL every URL the server hands out names the port it serves on; a server
    bound to every interface (0.0.0.0) announces the loopback address (OAuth needs https elsewhere)."""
    ws = await make_workspace()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serving(settings, "--host", host, "--port", str(port)):
        _wait_for(f"{base}/api/v1/ping")
        metadata = httpx.get(f"{base}/.well-known/oauth-authorization-server", timeout=5).json()
        assert metadata["issuer"].rstrip("/") == base
        for endpoint in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
            assert metadata[endpoint].startswith(f"{base}/"), metadata
        resource = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=5).json()
        assert resource["resource"] == f"{base}/mcp"
        assert [s.rstrip("/") for s in resource["authorization_servers"]] == [base]
        challenge = httpx.post(f"{base}/mcp", json={}, timeout=5)
        assert challenge.status_code == 401
        assert (
            f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
            in (challenge.headers["www-authenticate"])
        )
        openapi = httpx.get(f"{base}/api/v1/openapi.json", timeout=5).json()
        assert openapi["servers"] == [{"url": f"{base}/api/v1"}]

        # links in emails (the preview renders exactly what is sent) point at this server too
        async with httpx.AsyncClient(base_url=base, timeout=10) as http:
            campaign = await ok(http, ws, "POST", "/campaigns", {"name": "Links"})
            body = {"steps": [{"variants": [{"subject": "Hi", "body": "Hello\n\n{{unsubscribe}}"}]}]}
            await ok(http, ws, "PUT", f"/campaigns/{campaign['id']}/sequence", body)
            lead = await ok(http, ws, "POST", "/leads", {"email": f"links-{port}@acme.test"})
            await ok(http, ws, "POST", f"/campaigns/{campaign['id']}/leads", {"leadIds": [lead["id"]]})
            preview = await ok(http, ws, "GET", f"/campaigns/{campaign['id']}/preview")
        assert preview["unsubscribe"].startswith(f"{base}/u/")
        unsubscribe_page = httpx.get(preview["unsubscribe"], timeout=5)
        assert unsubscribe_page.status_code == 200 and "Unsubscribe" in unsubscribe_page.text


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def _metrics(port: int) -> str:
    return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text


def worker_children(pid: int, deadline_s: float = 30) -> dict[str, int]:
    """`outreach serve`'s worker processes by kind, once both run: `import` (`--only import`, the merge
    alone) and `others` (every other worker)."""
    deadline = time.monotonic() + deadline_s
    found: dict[str, int] = {}
    while time.monotonic() < deadline:
        found = {}
        for child in _children(pid):
            with open(f"/proc/{child}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            if b"worker" in args:
                only = args[args.index(b"--only") + 1].decode().split(",")
                found["import" if only == ["import"] else "others"] = child
        if len(found) == 2:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not both worker processes: {found}")


def test_serve_supervises_its_worker_processes(settings: Settings) -> None:
    """`outreach serve` runs the workers in two child processes, the import merge alone and every other
    worker but `usage`: both started with the server, each started again when it dies (kill -9), both
    stopped with the server on SIGTERM, all within 10 s."""
    port = free_port()
    proc = subprocess.Popen(
        [*OUTREACH, "serve", "--port", str(port)],
        env=_env(settings),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=(log := _log_file()),
        text=True,
    )
    try:
        assert _wait_for(f"http://127.0.0.1:{port}/api/v1/ping").status_code == 200
        first = worker_children(proc.pid)
        with open(f"/proc/{first['others']}/cmdline", "rb") as f:
            others = f.read().split(b"\0")
        names = others[others.index(b"--only") + 1].decode().split(",")
        assert "import" not in names and "usage" not in names and {"enrich", "sender"} <= set(names)
        for kind in ("import", "others"):
            os.kill(first[kind], signal.SIGKILL)
            deadline = time.monotonic() + 30
            while (now := worker_children(proc.pid))[kind] == first[kind]:
                assert time.monotonic() < deadline, f"the {kind} child was not started again"
                time.sleep(0.1)
        second = worker_children(proc.pid)
        assert second["import"] != first["import"] and second["others"] != first["others"], (first, now)
        deadline = time.monotonic() + 30
        while not all(  # each dead child is counted in /metrics once it reports again
            f'outreach_worker_process_restarts_total{{child="{kind}"}} 1.0' in (metrics := _metrics(port))
            for kind in ("import", "others")
        ):
            assert time.monotonic() < deadline, metrics
            time.sleep(0.2)
        time.sleep(1.0)  # their workers are running
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert time.monotonic() - started < 10
        for child in second.values():
            assert not os.path.exists(f"/proc/{child}") or _zombie(child)
    finally:
        if proc.poll() is None:
            proc.kill()
        stderr = _read_log(proc, log)
    # each kill was noticed and logged, naming the child
    exits = [line for line in stderr.splitlines() if "worker_process_exited" in line]
    assert len(exits) == 2 and "import" in exits[0] and "others" in exits[1], exits


def _zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] == "Z"


def test_the_worker_processes_stop_when_the_server_is_killed(settings: Settings) -> None:
    """A server killed with SIGKILL cannot stop its worker processes: each child notices within about a
    second and stops itself, instead of merging on for nobody."""
    port = free_port()
    proc = subprocess.Popen(
        [*OUTREACH, "serve", "--port", str(port)],
        env=_env(settings),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert _wait_for(f"http://127.0.0.1:{port}/api/v1/ping").status_code == 200
        children = worker_children(proc.pid)
        time.sleep(1.0)
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        for kind, child in children.items():
            while os.path.exists(f"/proc/{child}") and not _zombie(child):
                assert time.monotonic() < deadline, f"the {kind} worker process outlived its server"
                time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
