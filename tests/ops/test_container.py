"""The Docker image and the compose file (issue 30, item 4). The files are always checked; the image is
built and started where a Docker daemon is reachable (skipped otherwise, with the reason)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
yaml = pytest.importorskip("yaml")


def test_dockerfile_is_slim_non_root_with_the_entry_point_and_a_health_check() -> None:
    text = (ROOT / "Dockerfile").read_text()
    final = text.rsplit("\nFROM ", 1)[1]  # the runtime stage
    assert final.startswith("python:3.12-slim")
    user = re.search(r"^USER (\S+)", final, re.M)
    assert user and user.group(1).split(":")[0] not in {"root", "0"}
    assert re.search(r'^ENTRYPOINT \["outreach"\]', final, re.M)
    assert re.search(r"^HEALTHCHECK .*\n.*/healthz", final, re.M)
    assert "[dev]" not in text and "pip install --quiet ." in text


def test_compose_runs_postgres_serve_scalable_workers_and_caddy() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"postgres", "outreach", "worker", "caddy"}
    assert services["outreach"]["command"][0] == "serve" and "--no-workers" in services["outreach"]["command"]
    worker = services["worker"]
    assert worker["command"][0] == "worker"
    assert "container_name" not in worker and "ports" not in worker  # --scale worker=N works
    assert worker["environment"]["HEALTHCHECK_URL"].endswith(":9000/healthz")
    assert worker["environment"]["OUTREACH_DATABASE_URL"].startswith("postgresql://outreach:")
    assert services["outreach"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in services["caddy"]["volumes"]


def test_caddy_asks_the_service_before_on_demand_certificates() -> None:
    text = (ROOT / "deploy" / "Caddyfile").read_text()
    assert "ask http://outreach:8000/tls/ask" in text and "on_demand" in text
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.skip("caddy is not installed: the Caddyfile's syntax is not checked")
    env = {**os.environ, "OUTREACH_DOMAIN": "outreach.example.com", "ACME_EMAIL": "ops@example.com"}
    done = subprocess.run(
        [caddy, "adapt", "--config", str(ROOT / "deploy" / "Caddyfile"), "--adapter", "caddyfile"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert '"ask":"http://outreach:8000/tls/ask"' in done.stdout
    assert '"path":["/readyz","/metrics"]' in done.stdout  # not served to the internet


def _docker() -> str:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker is not installed")
    info = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=30)
    if info.returncode != 0:
        reason = (info.stderr.strip().splitlines() or ["docker info failed"])[-1]
        pytest.skip(f"no Docker daemon: {reason}")
    return docker


def test_the_image_builds_and_serves() -> None:
    docker = _docker()
    tag = f"outreach-test:{uuid.uuid4().hex[:8]}"
    build = subprocess.run(
        [docker, "build", "-t", tag, str(ROOT)], capture_output=True, text=True, timeout=1200
    )
    if build.returncode != 0 and re.search(
        r"pull|registry|resolve image|TLS handshake|dial tcp", build.stderr, re.I
    ):
        pytest.skip(f"the base image cannot be pulled here: {build.stderr.strip().splitlines()[-1]}")
    assert build.returncode == 0, build.stderr[-3000:]
    port = free_port()
    name = f"outreach-test-{uuid.uuid4().hex[:8]}"
    try:
        version = subprocess.run(
            [docker, "run", "--rm", tag, "--version"], capture_output=True, text=True, timeout=120
        )
        assert version.stdout.startswith("outreach ")
        uid = subprocess.run(
            [docker, "run", "--rm", "--entrypoint", "id", tag, "-u"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert uid.stdout.strip() not in {"", "0"}
        subprocess.run(
            [docker, "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:8000", tag],
            check=True,
            timeout=120,
        )
        deadline = time.monotonic() + 120
        ready = None
        while time.monotonic() < deadline:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
                if ready.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(1)
        assert ready is not None and ready.status_code == 200, ready and ready.text
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json() == {"status": "ok"}
        assert "outreach_http_requests_total" in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        subprocess.run([docker, "rm", "-f", name], capture_output=True, timeout=60)
        subprocess.run([docker, "rmi", "-f", tag], capture_output=True, timeout=60)
