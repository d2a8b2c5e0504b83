"""Ports: the protocols through which the core reaches the outside world.

Adapters live at the edge (`outreach_app`, `workers`) or in tests. The clock is the only port that tests
replace with a fake; every other port is exercised against a real server on loopback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that only moves when told to (tests, simulations)."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when.astimezone(UTC)


class DnsResolver(Protocol):
    async def lookup(self, name: str, rdtype: str) -> list[str]:
        """Answers for `name`/`rdtype` as text; empty for NXDOMAIN or no answer."""
        ...


class HttpClient(Protocol):
    async def post_json(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float
    ) -> tuple[int, bytes]:
        """POST raw JSON; returns (status, body). Status 0 when the peer did not answer."""
        ...


@dataclass(frozen=True)
class MailServer:
    """Where and as whom to log in to an SMTP or IMAP server."""

    host: str
    port: int
    security: Literal["tls", "starttls"]  # tls = implicit TLS from the first byte; starttls = upgrade
    user: str


class MailLogin(Protocol):
    """Login tests against a mailbox's servers. Each returns None when the login passed, else a short,
    human-readable reason (authentication failed, connection refused, TLS error, timeout...) that never
    contains the password or an exception's text."""

    async def test_smtp(self, server: MailServer, password: str) -> str | None: ...

    async def test_imap(self, server: MailServer, password: str) -> str | None: ...


@dataclass
class Ports:
    """The adapters an operation may use. Fields are optional so each door wires only what it has."""

    clock: Clock = field(default_factory=SystemClock)
    dns: DnsResolver | None = None
    http: HttpClient | None = None
    mail: MailLogin | None = None
