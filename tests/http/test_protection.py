"""Edge protection and request context middlewares, on tiny Starlette/ASGI apps (no database)."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from http_api.protection import RateLimit, RequestSizeLimit
from http_api.request_log import RequestContext, configure_logging, current_request_id, internal_error_handler

SECRET = "s3cr3t-exception-text"


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def client(app: ASGIApp, *, raise_app_exceptions: bool = True) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def _echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse({"received": len(body), "requestId": current_request_id()})


async def _ok(_: Request) -> Response:
    return JSONResponse({"ok": True})


async def _boom(_: Request) -> Response:
    raise RuntimeError(SECRET)


def starlette_app(**kwargs: Any) -> Starlette:
    routes = [
        Route("/api/v1/echo", _echo, methods=["POST"]),
        Route("/api/v1/me", _ok),
        Route("/api/v1/ping", _ok),
        Route("/mcp", _ok, methods=["GET", "POST"]),
        Route("/health", _ok),
        Route("/api/v1/boom", _boom),
    ]
    return Starlette(routes=routes, **kwargs)


def capture_logs() -> Any:
    """structlog's capture, with the context variables (request_id) merged in as in production."""
    return structlog.testing.capture_logs(processors=[structlog.contextvars.merge_contextvars])


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    return dict(body["error"])


# --- request size ----------------------------------------------------------------------------------------


async def test_content_length_over_limit_is_refused_before_the_app_runs() -> None:
    called = False

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal called
        called = True
        await JSONResponse({})(scope, receive, send)

    async with client(RequestSizeLimit(app, max_bytes=1024)) as c:
        r = await c.post("/api/v1/echo", content=b"x" * 1025)
    err = assert_error(r, 413, "payload_too_large")
    assert err["details"] == {"maxBytes": 1024}
    assert not called


async def test_streamed_body_over_limit_is_cut_off_while_received() -> None:
    yielded = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal yielded
        for _ in range(1000):
            yielded += 1
            yield b"y" * 500

    async with client(RequestSizeLimit(starlette_app(), max_bytes=1024)) as c:
        r = await c.post("/api/v1/echo", content=chunks())
    assert "content-length" not in r.request.headers
    assert_error(r, 413, "payload_too_large")
    assert yielded <= 4  # stopped reading right after the limit, not the 500 kB that was offered


async def test_streamed_body_over_limit_with_a_raw_asgi_app() -> None:
    """An app that keeps reading after the cut sees a disconnect; its late response is dropped."""
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            seen.append(message["type"])
            if message["type"] == "http.disconnect" or not message.get("more_body"):
                break
        await JSONResponse({"late": True})(scope, receive, send)

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"z" * 400

    async with client(RequestSizeLimit(app, max_bytes=1000)) as c:
        r = await c.post("/x", content=chunks())
    assert_error(r, 413, "payload_too_large")
    assert seen[-1] == "http.disconnect"


async def test_bodies_within_the_limit_pass() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(2):
            yield b"y" * 512

    async with client(RequestSizeLimit(starlette_app(), max_bytes=1024)) as c:
        r1 = await c.post("/api/v1/echo", content=b"x" * 1024)
        r2 = await c.post("/api/v1/echo", content=chunks())
    assert r1.status_code == 200 and r1.json()["received"] == 1024
    assert r2.status_code == 200 and r2.json()["received"] == 1024


async def test_app_errors_are_not_hidden_by_the_size_limit() -> None:
    async with client(RequestSizeLimit(starlette_app(), max_bytes=1024)) as c:
        with pytest.raises(RuntimeError, match=SECRET):
            await c.get("/api/v1/boom")


# --- rate limit ------------------------------------------------------------------------------------------


def limited(clock: FakeClock, per_minute: int = 60, burst: int = 3, **kwargs: Any) -> RateLimit:
    return RateLimit(starlette_app(), per_minute=per_minute, burst=burst, clock=clock, **kwargs)


async def test_burst_then_429_with_retry_after_and_ratelimit_headers() -> None:
    clock = FakeClock()
    async with client(limited(clock)) as c:
        responses = [await c.get("/api/v1/me", headers={"Authorization": "Bearer k1"}) for _ in range(3)]
        refused = await c.get("/api/v1/me", headers={"Authorization": "Bearer k1"})

    assert [r.status_code for r in responses] == [200, 200, 200]
    assert [r.headers["RateLimit-Remaining"] for r in responses] == ["2", "1", "0"]
    for r in responses:
        assert r.headers["RateLimit-Limit"] == "3"
        assert r.headers["RateLimit-Policy"] == "60;w=60"
        assert int(r.headers["RateLimit-Reset"]) >= 1
        assert "Retry-After" not in r.headers

    err = assert_error(refused, 429, "rate_limited")
    assert refused.headers["Retry-After"] == "1"
    assert err["details"] == {"retryAfter": 1}
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert refused.headers["RateLimit-Limit"] == "3"
    assert refused.headers["RateLimit-Reset"] == "3"
    assert refused.headers["RateLimit-Policy"] == "60;w=60"


async def test_credentials_have_separate_buckets() -> None:
    clock = FakeClock()
    async with client(limited(clock, burst=2)) as c:
        for _ in range(2):
            assert (await c.get("/api/v1/me", headers={"Authorization": "Bearer a"})).status_code == 200
        assert (await c.get("/api/v1/me", headers={"Authorization": "Bearer a"})).status_code == 429
        assert (await c.get("/api/v1/me", headers={"Authorization": "Bearer b"})).status_code == 200
        # Without a credential the client address is the key: a separate bucket again.
        assert (await c.get("/api/v1/me")).status_code == 200
        assert (await c.post("/mcp", headers={"Authorization": "Bearer a"})).status_code == 429


async def test_bucket_refills_over_time() -> None:
    clock = FakeClock()
    async with client(limited(clock, per_minute=30, burst=2)) as c:  # one token every 2 s
        auth = {"Authorization": "Bearer refill"}
        assert (await c.get("/api/v1/me", headers=auth)).status_code == 200
        assert (await c.get("/api/v1/me", headers=auth)).status_code == 200
        refused = await c.get("/api/v1/me", headers=auth)
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "2"

        clock.advance(1.0)
        refused = await c.get("/api/v1/me", headers=auth)
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "1"

        clock.advance(1.0)
        ok = await c.get("/api/v1/me", headers=auth)
        assert ok.status_code == 200
        assert ok.headers["RateLimit-Remaining"] == "0"
        assert (await c.get("/api/v1/me", headers=auth)).status_code == 429

        clock.advance(60.0)  # fully refilled, never above the burst
        statuses = [(await c.get("/api/v1/me", headers=auth)).status_code for _ in range(3)]
        assert statuses == [200, 200, 429]


async def test_ping_and_other_paths_are_not_limited() -> None:
    clock = FakeClock()
    async with client(limited(clock, burst=1)) as c:
        for _ in range(5):
            r = await c.get("/api/v1/ping")
            assert r.status_code == 200
            assert "RateLimit-Limit" not in r.headers
        for _ in range(5):
            assert (await c.get("/health")).status_code == 200
        assert (await c.get("/api/v1/me")).status_code == 200
        assert (await c.get("/api/v1/me")).status_code == 429


async def test_prefixes_are_configurable() -> None:
    clock = FakeClock()
    app = limited(clock, burst=1, prefixes=("/health",), exempt=())
    async with client(app) as c:
        assert (await c.get("/health")).status_code == 200
        assert (await c.get("/health")).status_code == 429
        assert (await c.get("/api/v1/me")).status_code == 200
        assert (await c.get("/api/v1/me")).status_code == 200


def test_bucket_memory_is_bounded_and_idle_buckets_are_dropped() -> None:
    clock = FakeClock()
    limiter = limited(clock, per_minute=60, burst=5, max_keys=10)
    for i in range(100):
        allowed, *_ = limiter.take(f"k{i}")
        assert allowed
        assert len(limiter) <= 10
    # Once buckets have been idle long enough to be full again they are dropped as traffic goes on.
    clock.advance(10.0)
    limiter.take("fresh-1")
    limiter.take("fresh-2")
    limiter.take("fresh-3")
    assert len(limiter) < 10


def test_rate_limit_rejects_nonsense_settings() -> None:
    with pytest.raises(ValueError):
        RateLimit(starlette_app(), per_minute=0, burst=1)
    with pytest.raises(ValueError):
        RequestSizeLimit(starlette_app(), max_bytes=0)


# --- request id, access log, last-resort 500 ---------------------------------------------------------------


async def test_request_id_is_generated_and_returned() -> None:
    async with client(RequestContext(starlette_app())) as c:
        r1 = await c.post("/api/v1/echo", content=b"{}")
        r2 = await c.post("/api/v1/echo", content=b"{}")
    rid = r1.headers["X-Request-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", rid)
    assert r1.json()["requestId"] == rid
    assert r2.headers["X-Request-Id"] != rid
    assert current_request_id() is None


@pytest.mark.parametrize(
    ("incoming", "kept"),
    [
        (b"abc-123_X.y", True),
        (b"a" * 64, True),
        (b"a" * 65, False),
        (b"bad id", False),
        (b"bad/id", False),
        (b"", False),
        ("é".encode("latin-1"), False),
    ],
)
async def test_incoming_request_id_is_honoured_only_when_safe(incoming: bytes, kept: bool) -> None:
    async with client(RequestContext(starlette_app())) as c:
        r = await c.post("/api/v1/echo", content=b"{}", headers={b"X-Request-Id": incoming})
    rid = r.headers["X-Request-Id"]
    assert (rid == incoming.decode("latin-1")) is kept
    assert r.json()["requestId"] == rid
    assert len(r.headers.get_list("X-Request-Id")) == 1


async def test_one_request_line_per_request_without_headers_or_bodies() -> None:
    async with client(RequestContext(starlette_app())) as c:
        with capture_logs() as logs:
            r = await c.post(
                "/api/v1/echo?search=hidden@example.com",
                content=b'{"password": "hunter2"}',
                headers={"Authorization": "Bearer very-secret-key", "X-Request-Id": "trace-1"},
            )
    lines = [e for e in logs if e["event"] == "request"]
    assert len(lines) == 1
    line = lines[0]
    assert line["method"] == "POST"
    assert line["path"] == "/api/v1/echo"
    assert line["status"] == 200
    assert line["request_id"] == "trace-1" == r.headers["X-Request-Id"]
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    text = json.dumps(logs, default=str)
    for secret in ("very-secret-key", "hunter2", "hidden@example.com"):
        assert secret not in text


async def test_unhandled_exception_in_raw_app_becomes_internal_error() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise ValueError(SECRET)

    async with client(RequestContext(app)) as c:
        with capture_logs() as logs:
            r = await c.get("/api/v1/anything")
    _check_internal(r, logs)


async def test_unhandled_exception_in_starlette_app_becomes_internal_error() -> None:
    app = RequestContext(starlette_app(exception_handlers={Exception: internal_error_handler}))
    async with client(app) as c:
        with capture_logs() as logs:
            r = await c.get("/api/v1/boom")
    _check_internal(r, logs)


def _check_internal(r: httpx.Response, logs: list[dict[str, Any]]) -> None:
    err = assert_error(r, 500, "internal")
    rid = r.headers["X-Request-Id"]
    assert err == {
        "code": "internal",
        "message": "Internal error. Quote the reference when reporting it.",
        "details": {"reference": rid},
    }
    assert SECRET not in r.text
    failed = [e for e in logs if e["event"] == "request_failed"]
    assert len(failed) == 1
    assert failed[0]["exc_info"] is True
    assert failed[0]["request_id"] == rid
    assert failed[0]["log_level"] == "error"
    assert [e["status"] for e in logs if e["event"] == "request"] == [500]


async def test_internal_error_handler_without_request_context_still_gives_a_reference() -> None:
    app = starlette_app(exception_handlers={Exception: internal_error_handler})
    async with client(app, raise_app_exceptions=False) as c:
        with capture_logs() as logs:
            r = await c.get("/api/v1/boom")
    err = assert_error(r, 500, "internal")
    assert re.fullmatch(r"[0-9a-f]{32}", err["details"]["reference"])
    assert SECRET not in r.text
    assert [e["reference"] for e in logs if e["event"] == "request_failed"] == [err["details"]["reference"]]


async def test_exception_after_a_partial_response_is_reraised() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        async def body() -> AsyncIterator[bytes]:
            yield b"partial"
            raise RuntimeError(SECRET)

        await StreamingResponse(body())(scope, receive, send)

    async with client(RequestContext(app)) as c:
        with capture_logs() as logs, pytest.raises(RuntimeError):
            await c.get("/api/v1/stream")
    assert [e["event"] for e in logs] == ["request_failed", "request"]


async def test_protection_errors_carry_the_request_id() -> None:
    clock = FakeClock()
    sized = RequestSizeLimit(starlette_app(), 1024)
    app = RequestContext(RateLimit(sized, per_minute=60, burst=1, clock=clock))
    async with client(app) as c:
        too_big = await c.post("/api/v1/echo", content=b"x" * 2048)
        limited_ = await c.post("/api/v1/echo", content=b"{}")
    assert_error(too_big, 413, "payload_too_large")
    assert_error(limited_, 429, "rate_limited")
    assert too_big.headers["X-Request-Id"] and limited_.headers["X-Request-Id"]


# --- configure_logging -----------------------------------------------------------------------------------


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    config = structlog.get_config()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.configure(**config)


def _our_handler() -> logging.StreamHandler[Any]:
    handlers = [h for h in logging.getLogger().handlers if h.get_name() == "outreach"]
    assert len(handlers) == 1
    handler = handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    return handler


def test_json_logs_have_utc_timestamps_and_context(restore_logging: None) -> None:
    configure_logging("info", json=True)
    configure_logging("INFO", json=True)  # idempotent: still one handler
    buffer = io.StringIO()
    _our_handler().setStream(buffer)
    with structlog.contextvars.bound_contextvars(request_id="rid-1"):
        structlog.get_logger("test").info("hello", answer=42)
        structlog.get_logger("test").debug("not shown")
        logging.getLogger("stdlib").warning("from %s", "stdlib")
        try:
            raise KeyError("k")
        except KeyError:
            structlog.get_logger("test").error("failed", exc_info=True)
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["hello", "from stdlib", "failed"]
    hello = lines[0]
    assert hello["answer"] == 42 and hello["level"] == "info" and hello["request_id"] == "rid-1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", hello["timestamp"])
    assert lines[1]["request_id"] == "rid-1"
    assert "KeyError" in lines[2]["exception"]


def test_console_logs(restore_logging: None) -> None:
    configure_logging("debug", json=False)
    buffer = io.StringIO()
    _our_handler().setStream(buffer)
    structlog.get_logger("test").debug("shown", n=1)
    assert "shown" in buffer.getvalue() and "n=1" in buffer.getvalue()


def test_unknown_log_level_is_refused() -> None:
    with pytest.raises(ValueError):
        configure_logging("loud", json=True)
