"""Webhook receivers as a customer runs them: a real HTTP server (uvicorn, in the test's event loop) that
records every request and checks its signature with the verification snippet of docs/webhooks.md, run as
written there.

Each test registers its own path (`receiver.endpoint(...)`) with the secrets to verify with and how to
answer (status, delay, a huge body, a redirect), so one server serves a whole session.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def load_snippet() -> Callable[..., bool]:
    """`verify_signature` from the Python block under "Verifying a request" in docs/webhooks.md."""
    text = DOC.read_text()
    section = text.split("### Verifying a request", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None, "docs/webhooks.md lost its verification snippet"
    namespace: dict[str, Any] = {}
    exec(compile(code.group(1), str(DOC), "exec"), namespace)
    verify: Callable[..., bool] = namespace["verify_signature"]
    return verify


verify_signature = load_snippet()


@dataclass
class Answer:
    status: int = 200
    body: bytes = b"ok"
    delay_s: float = 0.0
    location: str | None = None
    huge_mb: int = 0  # stream this many MiB of body (the client should stop reading early)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.time() on arrival
    verified: bool

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def event_id(self) -> str:
        return self.headers.get("service-event-id", "")


@dataclass
class Endpoint:
    path: str
    url: str
    secrets: list[str] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)  # in turn; the last one repeats
    now: Callable[[], float] | None = None  # the clock signatures are checked against (None: real time)

    def next_answer(self) -> Answer:
        if not self.answers:
            return Answer()
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class Receiver:
    """An ASGI app recording each request (see the module docstring)."""

    def __init__(self) -> None:
        self.base_url = ""
        self.endpoints: dict[str, Endpoint] = {}
        self.received: list[Received] = []
        self._arrived = asyncio.Condition()

    def endpoint(self, *answers: Answer, now: Callable[[], float] | None = None) -> Endpoint:
        path = f"/hooks/{uuid.uuid4().hex}"
        found = Endpoint(path, self.base_url + path, answers=list(answers), now=now)
        self.endpoints[path] = found
        return found

    def at(self, endpoint: Endpoint) -> list[Received]:
        return [r for r in self.received if r.path == endpoint.path]

    async def wait_for(self, endpoint: Endpoint, count: int, timeout_s: float = 10.0) -> list[Received]:
        async def enough() -> None:
            async with self._arrived:
                await self._arrived.wait_for(lambda: len(self.at(endpoint)) >= count)

        await asyncio.wait_for(enough(), timeout_s)
        return self.at(endpoint)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        found = self.endpoints.get(scope["path"])
        verified = False
        if found is not None and found.secrets:
            now = found.now() if found.now is not None else None
            verified = any(
                verify_signature(secret, headers.get("service-signature", ""), body, now=now)
                for secret in found.secrets
            )
        async with self._arrived:
            self.received.append(Received(scope["path"], headers, body, time.time(), verified))
            self._arrived.notify_all()
        answer = found.next_answer() if found is not None else Answer(404, b"unknown path")
        if answer.delay_s:
            await asyncio.sleep(answer.delay_s)
        extra = [(b"location", answer.location.encode())] if answer.location else []
        if answer.huge_mb:
            await send({"type": "http.response.start", "status": answer.status, "headers": extra})
            chunk = b"x" * (1 << 20)
            try:
                for _ in range(answer.huge_mb):
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            except OSError:
                pass  # the client stopped reading
            return
        length = [(b"content-length", str(len(answer.body)).encode())]
        await send({"type": "http.response.start", "status": answer.status, "headers": length + extra})
        await send({"type": "http.response.body", "body": answer.body})


class ClosingServer:
    """A TCP server that reads the request's first bytes and closes the connection without answering."""

    def __init__(self) -> None:
        self.connections = 0
        self.url = ""
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/hook"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await reader.read(1024)
        writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
