"""The Caddyfile of docs/link-domain.md, run by Caddy from Debian's package: on-demand TLS from its internal
CA, asking the service's `/tls/ask`. A link domain becomes active through the certificate Caddy issues;
a host name that is no link domain gets none; through Caddy the link domain serves links and not the API.
Skips without Caddy, unless OUTREACH_REQUIRE_SERVERS=1 (CI)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import ssl
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from outreach_core.link_domain.endpoints import ENDPOINTS
from outreach_core.link_domain.operations import check_link_domain
from tests.conftest import MakeWorkspace, free_port
from tests.link_domain.conftest import LinkEnv, make_runtime
from tests.mail_servers import missing

DOC = Path(__file__).resolve().parents[2] / "docs" / "link-domain.md"
TEST_OPTIONS = "\tlocal_certs\n\tskip_install_trust\n\tadmin off\n\thttp_port {http}\n\thttps_port {https}\n"


def documented_caddyfile() -> str:
    """The ```caddyfile block of docs/link-domain.md."""
    found = re.search(r"```caddyfile\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert found, "docs/link-domain.md has no caddyfile block"
    return found.group(1)


@dataclass
class Caddy:
    https_port: int
    root: Path  # Caddy's internal CA root certificate

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.root))


@pytest.fixture(scope="module")
def caddy_binary() -> Iterator[str]:
    binary = shutil.which("caddy")
    if binary is None:
        missing("Caddy is not installed (apt-get install caddy)")
    yield str(binary)


@pytest.fixture
async def caddy(caddy_binary: str, link_server: str) -> AsyncIterator[Caddy]:
    home = Path(tempfile.mkdtemp(prefix="outreach-caddy-"))
    http_port, https_port = free_port(), free_port()
    caddyfile = documented_caddyfile()
    assert caddyfile.startswith("{\n")
    config = "{\n" + TEST_OPTIONS.format(http=http_port, https=https_port) + caddyfile[2:]
    (home / "Caddyfile").write_text(config)
    upstream = urlsplit(link_server).netloc
    env = {
        **os.environ,
        "OUTREACH_UPSTREAM": upstream,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    process = subprocess.Popen(
        [caddy_binary, "run", "--config", str(home / "Caddyfile"), "--adapter", "caddyfile"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(home / "caddy.log").open("wb"),
    )
    root = home / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    try:
        for _ in range(200):
            if root.exists() and _listening(https_port):
                break
            if process.poll() is not None:
                pytest.fail(f"caddy exited: {(home / 'caddy.log').read_text()[-2000:]}")
            await asyncio.sleep(0.05)
        else:
            pytest.fail(f"caddy did not start: {(home / 'caddy.log').read_text()[-2000:]}")
        yield Caddy(https_port, root)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(home, ignore_errors=True)


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


async def _get(caddy: Caddy, hostname: str, path: str) -> tuple[int, str]:
    """GET `path` through Caddy as a browser on `hostname` would: SNI and Host the link domain, the
    certificate verified against Caddy's root."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", caddy.https_port, ssl=caddy.context(), server_hostname=hostname
    )
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {hostname}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 20)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode(errors="replace")


async def test_caddy_issues_the_certificate_that_makes_a_link_domain_active(
    caddy: Caddy, link_http: httpx.AsyncClient, link_env: LinkEnv, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    name = f"links.{ws.slug}.example.com"
    link_env.publish(name)
    saved = await link_http.put("/api/v1/link-domain", headers=ws.headers, json={"hostname": name})
    assert saved.json()["status"] == "pending_tls", saved.text

    through_caddy = make_runtime(
        link_env.runtime,
        link_env.dns,
        link_env.tls,
        link_tls_port=caddy.https_port,
        tls_ca_file=str(caddy.root),
        link_check_timeout_s=20.0,
    )
    check = next(e for e in ENDPOINTS if e.operation is check_link_domain)
    shown = await through_caddy.call(await ws.principal(), check)
    assert (shown.status, shown.dns, shown.tls) == ("active", "ok", "active"), shown.message

    status, body = await _get(caddy, name, "/u/not-a-real-token")
    assert status == 404 and "unsubscribe link is not valid" in body
    status, body = await _get(caddy, name, "/api/v1/ping")
    assert status == 404 and "link domain" in body

    # A host name that is no link domain: Caddy asks, is told no, and issues nothing.
    stranger = f"nobody.{ws.slug}.example.com"
    link_env.publish(stranger)
    with pytest.raises(ssl.SSLError):
        await _get(caddy, stranger, "/")
