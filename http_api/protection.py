"""Edge protection as pure ASGI middlewares: request size limit and per-credential rate limit.

Both answer with the service's standard error body `{"error": {"code", "message", "details"}}` and never read
more of a request than they allow. Suggested order, outermost first (see docs/protection.md):

    RequestContext(RateLimit(RequestSizeLimit(app, max_bytes), per_minute, burst))
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from outreach_core.kernel.errors import OutreachError, PayloadTooLarge, RateLimited

log = structlog.get_logger("outreach.http")

Headers = list[tuple[bytes, bytes]]


async def send_error(send: Send, err: OutreachError, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Send `err` as a complete JSON error response (status from the error, standard body)."""
    body = json.dumps(err.to_body(), separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": err.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


# --- request size ----------------------------------------------------------------------------------------


class RequestSizeLimit:
    """Refuse request bodies larger than `max_bytes` with 413 `payload_too_large`.

    A declared `Content-Length` above the limit is refused before the app runs. A body without one
    (chunked) is counted while the app receives it: the moment it passes the limit, the 413 is sent (when the
    app has not started answering), the app is told the client went away, and anything it sends afterwards
    is dropped.
    At most one chunk beyond the limit is ever held in memory.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await send_error(send, self._error(), [(b"connection", b"close")])
            return

        received = 0
        response_started = False
        cut = False  # the body passed the limit; the app now only sees a disconnect
        answered = False  # we sent the 413 ourselves

        async def limited_receive() -> Message:
            nonlocal received, cut, answered
            if cut:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] != "http.request":
                return message
            received += len(message.get("body", b""))
            if received <= self.max_bytes:
                return message
            cut = True
            if not response_started:
                answered = True
                await send_error(send, self._error(), [(b"connection", b"close")])
            return {"type": "http.disconnect"}

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if answered:
                return  # the 413 went out; the app's late answer has nowhere to go
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception as exc:
            if not answered:
                raise
            # The app failed because we cut its body short (e.g. Starlette's ClientDisconnect) after the 413
            # went out: the expected outcome, not a server error.
            log.debug("request_body_cut", max_bytes=self.max_bytes, error=type(exc).__name__)

    def _error(self) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"Request body is larger than {self.max_bytes} bytes.", {"maxBytes": self.max_bytes}
        )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server rejects it; the streamed count still applies
    return None


# --- rate limit ------------------------------------------------------------------------------------------


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimit:
    """Token bucket per credential: `burst` requests at once, refilled at `per_minute` per minute.

    The bucket key is the SHA-256 of the bearer credential when there is one (the secret itself is never
    kept; `bearer`, `BEARER` and extra spaces are the same credential), else the client address. Only
    paths under `prefixes` are limited, except those in `exempt`. Every limited response carries
    `RateLimit-Limit` (bucket capacity), `RateLimit-Remaining`, `RateLimit-Reset` (seconds until the
    bucket is full) and `RateLimit-Policy` (`<per_minute>;w=60`); an empty bucket answers 429
    `rate_limited` with `Retry-After`.

    Memory is bounded: buckets live in an LRU of at most `max_keys` entries, and buckets that have been idle
    long enough to be full again (indistinguishable from a fresh one) are dropped as they reach its head.
    """

    def __init__(
        self,
        app: ASGIApp,
        per_minute: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        *,
        prefixes: Iterable[str] = ("/api/v1", "/mcp"),
        exempt: Iterable[str] = ("/api/v1/ping",),
        max_keys: int = 100_000,
    ) -> None:
        if per_minute <= 0 or burst < 1 or max_keys < 1:
            raise ValueError("per_minute, burst and max_keys must be positive")
        self.app = app
        self.per_minute = per_minute
        self.burst = burst
        self.clock = clock
        self.rate = per_minute / 60.0  # tokens per second
        self.prefixes = tuple(p.rstrip("/") for p in prefixes)
        self.exempt = frozenset(p.rstrip("/") for p in exempt)
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._policy = f"{per_minute};w=60".encode()
        self._evicted = 0

    def applies_to(self, path: str) -> bool:
        """Whether requests to `path` are rate limited."""
        path = path.rstrip("/") or "/"
        if path in self.exempt:
            return False
        return any(path == p or path.startswith(p + "/") for p in self.prefixes)

    def limits(self, scope: Scope) -> bool:
        """Whether this request is counted."""
        return scope["type"] == "http" and self.applies_to(scope.get("path", ""))

    def bucket_key(self, scope: Scope) -> str:
        """The bucket a request is counted in: its bearer credential, else its client address."""
        return _bucket_key(scope)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.limits(scope):
            await self.app(scope, receive, send)
            return
        allowed, remaining, reset_s, retry_s = self.take(self.bucket_key(scope))
        headers: Headers = [
            (b"ratelimit-limit", str(self.burst).encode()),
            (b"ratelimit-remaining", str(remaining).encode()),
            (b"ratelimit-reset", str(reset_s).encode()),
            (b"ratelimit-policy", self._policy),
        ]
        if not allowed:
            await send_error(send, RateLimited(retry_s), [(b"retry-after", str(retry_s).encode()), *headers])
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *headers]}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def take(self, key: str) -> tuple[bool, int, int, int]:
        """Take one token from `key`'s bucket.

        Returns (allowed, remaining whole tokens, seconds until full, seconds until the next token).
        """
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(tokens=float(self.burst), updated=now)
            self._make_room(now)
            self._buckets[key] = bucket
        else:
            self._buckets.move_to_end(key)
            elapsed = max(0.0, now - bucket.updated)
            bucket.tokens = min(float(self.burst), bucket.tokens + elapsed * self.rate)
            bucket.updated = now

        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        self._drop_idle_head(now)  # after taking: the bucket just used is never idle
        missing = self.burst - bucket.tokens
        reset_s = math.ceil(missing / self.rate) if missing > 1e-9 else 0
        retry_s = 0 if allowed else max(1, math.ceil((1.0 - bucket.tokens) / self.rate))
        return allowed, int(bucket.tokens), reset_s, retry_s

    def __len__(self) -> int:
        return len(self._buckets)

    def _is_idle(self, bucket: _Bucket, now: float) -> bool:
        return bucket.tokens + (now - bucket.updated) * self.rate >= self.burst

    def _drop_idle_head(self, now: float) -> None:
        # Amortised O(1): the head is the least recently used bucket.
        for _ in range(2):
            if not self._buckets:
                return
            key, head = next(iter(self._buckets.items()))
            if not self._is_idle(head, now):
                return
            del self._buckets[key]

    def _make_room(self, now: float) -> None:
        while len(self._buckets) >= self.max_keys:
            key, head = next(iter(self._buckets.items()))
            del self._buckets[key]
            if not self._is_idle(head, now):
                self._evicted += 1
                if self._evicted % 10_000 == 1:  # a flood of new keys must not flood the logs too
                    log.warning("rate_limit_buckets_evicted", max_keys=self.max_keys, total=self._evicted)


class AddressRateLimit(RateLimit):
    """`count` requests per `window_s` seconds per client address (a bucket of `count`, refilled evenly over
    the window), for `methods` on `paths`: for anonymous endpoints such as OAuth dynamic client
    registration. Answers like `RateLimit` (429 `rate_limited`, `Retry-After`, `RateLimit-*` headers with
    the policy `<count>;w=<window_s>`)."""

    def __init__(
        self,
        app: ASGIApp,
        count: int,
        window_s: int,
        clock: Callable[[], float] = time.monotonic,
        *,
        paths: Iterable[str],
        methods: Iterable[str] = ("POST",),
        max_keys: int = 100_000,
    ) -> None:
        if count < 1 or window_s < 1:
            raise ValueError("count and window_s must be positive")
        super().__init__(
            app, count * 60 / window_s, count, clock, prefixes=paths, exempt=(), max_keys=max_keys
        )
        self.methods = frozenset(m.upper() for m in methods)
        self._policy = f"{count};w={window_s}".encode()

    def limits(self, scope: Scope) -> bool:
        return super().limits(scope) and scope.get("method") in self.methods

    def bucket_key(self, scope: Scope) -> str:
        return _address_key(scope)


def _address_key(scope: Scope) -> str:
    client = scope.get("client")
    return f"ip:{client[0]}" if client else "ip:unknown"


def _bucket_key(scope: Scope) -> str:
    """The credential's bucket (its SHA-256, whatever the spelling of `Bearer` and the spaces around it), or
    the client address for requests without a well-formed bearer credential."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            credential = bearer_credential(value)
            if credential is not None:
                return "auth:" + hashlib.sha256(credential).hexdigest()
            break
    return _address_key(scope)


def bearer_credential(header: bytes) -> bytes | None:
    """The token of an `Authorization: Bearer <token>` header, as every door reads it: the scheme in any
    case, any whitespace around the token. None for another scheme or no token."""
    parts = header.split(None, 1)
    if len(parts) != 2 or parts[0].lower() != b"bearer":
        return None
    token = parts[1].strip()
    return token or None
