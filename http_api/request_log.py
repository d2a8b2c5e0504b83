"""Structured logs and request ids.

`configure_logging` sets up structlog (and routes the standard library's loggers, e.g. uvicorn's, through
the same renderer). `RequestContext` gives every HTTP request an id, returns it as `X-Request-Id`, logs one
`request` line per request and turns an unhandled exception into the standard 500 `internal` error whose
`details.reference` is that id, so a user can quote it and an operator can find the traceback.
"""

from __future__ import annotations

import logging
import re
import sys
import time
import uuid
from contextvars import ContextVar
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from http_api.protection import send_error
from outreach_core.kernel.errors import Internal

REQUEST_ID_HEADER = b"x-request-id"
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_request_id: ContextVar[str | None] = ContextVar("outreach_request_id", default=None)

log = structlog.get_logger("outreach.http")


def current_request_id() -> str | None:
    """The id of the request being handled in this context, if any."""
    return _request_id.get()


def new_request_id() -> str:
    """A fresh request id (32 hex characters)."""
    return uuid.uuid4().hex


def logs_as_json(json: bool | None, stream: Any = None) -> bool:
    """Whether logs are JSON lines: as configured (`OUTREACH_LOG_JSON`), else unless `stream` (stderr) is a
    terminal, where people read them."""
    if json is not None:
        return json
    stream = sys.stderr if stream is None else stream
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return True


class _MigrationChatter(logging.Filter):
    """Alembic's `Context impl ...`, `Will assume transactional DDL` and `Running upgrade ...` lines are
    INFO to Alembic and DEBUG to us: shown only with OUTREACH_LOG_LEVEL=DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("alembic") and record.levelno == logging.INFO:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


def configure_logging(level: str, json: bool | None) -> None:
    """Configure structlog and the standard library's root logger; safe to call more than once.

    `json=True` writes one JSON object per line (for log collectors), `False` a readable console format, and
    `None` chooses (`logs_as_json`): readable when stderr is a terminal, JSON otherwise. Alembic's
    migration lines are logged at DEBUG.
    Every line has an ISO 8601 UTC `timestamp`, the `level`, and the context variables bound at the time
    (such as `request_id`). Logs go to stderr; stdout is left for command output.
    """
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")

    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Any
    if logs_as_json(json):
        shared.append(structlog.processors.format_exc_info)
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    handler.set_name("outreach")
    handler.addFilter(_MigrationChatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "outreach"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)


def _incoming_request_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == REQUEST_ID_HEADER:
            try:
                candidate = value.decode("ascii")
            except UnicodeDecodeError:
                return None
            return candidate if _SAFE_REQUEST_ID.fullmatch(candidate) else None
    return None


class RequestContext:
    """Request id, one access-log line per request, and the last-resort 500.

    An incoming `X-Request-Id` made of at most 64 of `[A-Za-z0-9._-]` is kept (so ids can be traced across
    a proxy); anything else is replaced by a fresh id. The id is bound into structlog's context variables for
    every log line written while handling the request and is returned as `X-Request-Id`.

    The `request` line holds method, path (never the query string), status, duration_ms and request_id, and
    never headers or bodies. An exception escaping the app is logged as `request_failed` with its traceback;
    if no response has started yet, the client gets 500 `internal` with `details.reference` = request id and
    nothing about the exception. If the app already sent a complete response (Starlette's error middleware
    answers, then re-raises) the exception is only logged; if a response was cut off midway, it is re-raised
    so the server aborts the connection and the client can tell the response is incomplete.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _incoming_request_id(scope) or new_request_id()
        token = _request_id.set(request_id)
        try:
            with structlog.contextvars.bound_contextvars(request_id=request_id):
                await self._handle(scope, receive, send, request_id)
        finally:
            _request_id.reset(token)

    async def _handle(self, scope: Scope, receive: Receive, send: Send, request_id: str) -> None:
        started = time.perf_counter()
        status: int | None = None
        complete = False
        id_header = (REQUEST_ID_HEADER, request_id.encode())

        async def send_with_id(message: Message) -> None:
            nonlocal status, complete
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != REQUEST_ID_HEADER]
                message = {**message, "headers": [*headers, id_header]}
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                complete = True
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.error("request_failed", method=scope.get("method"), path=scope.get("path"), exc_info=True)
            if status is None:
                await send_error(send_with_id, Internal(request_id))
            elif not complete:
                self._log_request(scope, status, started)
                raise
        self._log_request(scope, status, started)

    @staticmethod
    def _log_request(scope: Scope, status: int | None, started: float) -> None:
        log.info(
            "request",
            method=scope.get("method"),
            path=scope.get("path"),
            status=status,
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )


async def internal_error_handler(request: Request, exc: Exception) -> Response:
    """Starlette handler for `Exception`: the standard 500 body referencing the request id.

    Register it as `Starlette(exception_handlers={Exception: internal_error_handler})`. Starlette's error
    middleware sends this response and re-raises, and `RequestContext` then logs the traceback once. Without
    `RequestContext` in front (no request id), a fresh reference is made and the exception is logged here.
    """
    reference = current_request_id()
    if reference is None:
        reference = new_request_id()
        log.error("request_failed", path=request.url.path, reference=reference, exc_info=exc)
    err = Internal(reference)
    return JSONResponse(err.to_body(), status_code=err.status)
