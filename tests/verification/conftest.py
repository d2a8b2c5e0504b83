"""Fixtures for verification tests: a real verifier API on loopback, and runtimes wired like a worker's
(the session database, DNS pointed at the loopback DNS server, HTTP through `GuardedHttpClient`)."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from outreach_app.adapters import DnspythonResolver
from outreach_app.adapters.http import GuardedHttpClient
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from tests.conftest import merge_every_queued_import_part
from tests.dns_server import DnsServer

API_KEY = "test-verifier-key"


@dataclass
class Answer:
    status: int = 200
    body: bytes = b'{"status": "valid"}'
    delay_s: float = 0.0


@dataclass
class VerifierApi:
    """A verifier API speaking our protocol. `answer(email, ...)` queues answers for one address (the last
    one repeats); unknown addresses get `{"status": "valid"}`. `requests` records every call."""

    url: str = ""
    answers: dict[str, list[Answer]] = field(default_factory=lambda: defaultdict(list))
    requests: list[tuple[dict[str, str], Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(
        self,
        email: str,
        status: int = 200,
        *,
        json_body: Any = None,
        raw: bytes | None = None,
        delay_s: float = 0.0,
    ) -> None:
        body = raw if raw is not None else json.dumps(json_body if json_body is not None else {}).encode()
        with self.lock:
            self.answers[email].append(Answer(status, body, delay_s))

    def verdict(self, email: str, status: str, reason: str | None = None) -> None:
        self.answer(email, json_body={"status": status, **({"reason": reason} if reason else {})})

    def calls_for(self, email: str) -> int:
        with self.lock:
            return sum(
                1 for _, body in self.requests if isinstance(body, dict) and body.get("email") == email
            )

    def _next(self, email: str) -> Answer:
        with self.lock:
            queue = self.answers.get(email)
            if not queue:
                return Answer()
            return queue.pop(0) if len(queue) > 1 else queue[0]


def _handler(api: VerifierApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw
            with api.lock:
                api.requests.append((dict(self.headers.items()), body))
            email = body.get("email", "") if isinstance(body, dict) else ""
            answer = api._next(email)
            if answer.delay_s:
                time.sleep(answer.delay_s)
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@pytest.fixture(scope="session")
def verifier_api() -> Iterator[VerifierApi]:
    api = VerifierApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    server.daemon_threads = True
    api.url = f"http://127.0.0.1:{server.server_address[1]}/v1/verify"
    thread = threading.Thread(target=server.serve_forever, name="verifier-api", daemon=True)
    thread.start()
    yield api
    server.shutdown()
    server.server_close()


MakeRuntime = Callable[..., Runtime]


@pytest.fixture
async def make_runtime(
    runtime: Runtime, dns_server: DnsServer, verifier_api: VerifierApi
) -> AsyncIterator[MakeRuntime]:
    """`make_runtime(api=True, clock=..., nameservers=..., timeout_s=...)`: a worker-like runtime on the
    session database. `api=False` leaves the verifier unconfigured; `nameservers` overrides the DNS server
    (a closed port makes every lookup fail)."""
    clients: list[GuardedHttpClient] = []

    def make(
        *,
        api: bool = True,
        clock: FixedClock | None = None,
        nameservers: str | None = None,
        timeout_s: float = 2.0,
        allow_private: bool = True,
        url: str | None = None,
    ) -> Runtime:
        ns = nameservers or dns_server.nameservers
        settings = runtime.settings.model_copy(
            update={
                "verifier_url": (url or verifier_api.url) if api else None,
                "verifier_api_key": API_KEY if api else None,
                "verifier_timeout_s": timeout_s,
                "dns_nameservers": ns,
                "allow_private_urls": allow_private,
            }
        )
        client = GuardedHttpClient(allow_private_urls=allow_private)
        clients.append(client)
        return Runtime(
            settings,
            engine=runtime.engine,
            ports=Ports(
                clock=clock or FixedClock(datetime.now(UTC)),
                dns=DnspythonResolver(ns, timeout_s=0.3),
                http=client,
            ),
        )

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture(autouse=True)
async def no_import_being_stored(runtime: Runtime) -> None:
    """Verification waits while an import is being stored: merge what other tests left queued first."""
    await merge_every_queued_import_part(runtime)
