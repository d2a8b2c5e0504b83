"""The runtime: the one place where a database transaction begins.

Doors and workers never open connections themselves. They call `Runtime.execute(principal, op, ...)` for
work on behalf of a caller, or `Runtime.system(fn, ...)` for work with no caller (authentication, CLI,
workers). Each call is one transaction: committed when the function returns, rolled back when it raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from outreach_core.kernel.context import Principal, Role, SystemContext, WorkspaceContext
from outreach_core.kernel.db.engine import create_engine
from outreach_core.kernel.db.side_queue import dispose_side_queue
from outreach_core.kernel.db.turns import WriteTurns
from outreach_core.kernel.endpoint import Answered, AnyEndpoint, refuse_lower_role
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.usage import UsageTracker

P = ParamSpec("P")
R = TypeVar("R")
Authenticate = Callable[[SystemContext], Awaitable[Principal]]
"""Turns a credential into a `Principal` inside the operation's own transaction (one round trip fewer)."""
Caller = Principal | Authenticate

_SERIALIZATION_RETRIES = 3
_holds_write_gate: ContextVar[bool] = ContextVar("holds_write_gate", default=False)
_write_gates: weakref.WeakKeyDictionary[AsyncEngine, asyncio.Lock] = weakref.WeakKeyDictionary()
"""One queue of write transactions per engine, however many runtimes share it."""
_turns: weakref.WeakKeyDictionary[AsyncEngine, WriteTurns | None] = weakref.WeakKeyDictionary()
"""SQLite files: the turn this process takes with the other processes writing the file (`db/turns.py`)."""

QUEUED_CALL_SLOTS = 4
"""How many calls that wait for a lock (`Endpoint.waits_for`) may hold database connections at once in a
process, whatever their lock names: well below the pool (15 connections on SQLite, 20 on PostgreSQL), so
that the rest of the pool always serves other requests. Each holds one while it waits for a lock held
elsewhere (another process: the worker process releasing merged parts on SQLite, a second server on
PostgreSQL); four keep two cores busy."""


class Runtime:
    """Owns the engine, settings and ports; hands each operation a context inside a transaction."""

    def __init__(self, settings: Settings, *, engine: AsyncEngine | None = None, ports: Ports | None = None):
        self.settings = settings
        self.engine = engine or create_engine(settings.database_url)
        self.ports = ports or Ports()
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self.usage = UsageTracker()
        self._write_gate = _write_gates.setdefault(self.engine, asyncio.Lock())
        if self.engine not in _turns:
            _turns[self.engine] = _file_turns(self.engine)
        self._turns = _turns[self.engine]
        self._queue = _call_queues.setdefault(self.engine, _CallQueue())

    async def call(self, caller: Caller, endpoint: AnyEndpoint, /, **kwargs: Any) -> Any:
        """Run a catalogued endpoint the way both doors do: the caller's role checked against the
        endpoint's (403 `forbidden` below it, before anything else runs), its `prepare` step first, outside
        any transaction (after the caller is authenticated in a short read transaction), then the operation
        in one transaction (read-only or read-write as the endpoint says) with `prepared=` the step's
        result (unless the step answered the call itself, `Answered`: then its value is the result).

        An endpoint that `waits_for` a lock is queued before its `prepare` step and its transaction take
        a database connection (`_CallQueue`): one call at a time per lock name, at most `QUEUED_CALL_SLOTS`
        of them at once in the process. Without it, chunks of one import sent at once each took one of the
        pool's connections and then waited for the lock (SQLite: the side file's; PostgreSQL: the import's
        row), so that 15-20 of them left no connection to any other request, which failed after the pool's
        30 s (`tests/leads/test_import_concurrent_chunks.py`)."""
        if endpoint.prepare is None and endpoint.waits_for is None:
            maker = self._for(caller, endpoint.role)
            return await self._run(maker, endpoint.operation, endpoint.read_only, (), kwargs)
        principal = caller if isinstance(caller, Principal) else await self.system_read(caller)
        refuse_lower_role(endpoint.role, principal)
        outside = _Outside(self, principal)
        name = None if endpoint.waits_for is None else endpoint.waits_for(outside, **kwargs)
        async with self._queue.turn(name):
            if endpoint.prepare is not None:
                prepared = await endpoint.prepare(outside, **kwargs)
                if isinstance(prepared, Answered):
                    return prepared.value
                kwargs["prepared"] = prepared
            maker = self._for(principal, endpoint.role)
            return await self._run(maker, endpoint.operation, endpoint.read_only, (), kwargs)

    async def describe(self, caller: Caller, endpoint: AnyEndpoint, /, **kwargs: Any) -> str:
        """The confirmation question of an endpoint that asks to confirm (`Endpoint.confirm`), for the
        same arguments as the call, in a read-only transaction; a caller below the endpoint's role gets
        403 `forbidden` instead, as the call would."""
        if endpoint.confirm is None:
            raise TypeError(f"{endpoint.name} does not ask to confirm")
        return await self._run(self._for(caller, endpoint.role), endpoint.confirm, True, (), kwargs)

    async def execute(
        self,
        caller: Caller,
        op: Callable[Concatenate[WorkspaceContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Run `op(ctx, *args, **kwargs)` for `caller` in one read-write transaction.

        `caller` is a `Principal`, or a function that authenticates a credential; it then runs first, inside
        the same transaction, so an authenticated request costs one transaction, not two."""
        return await self._run(self._for(caller), op, False, args, kwargs)

    async def read(
        self,
        caller: Caller,
        op: Callable[Concatenate[WorkspaceContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Like `execute`, for operations that only read (no write lock is taken on SQLite)."""
        return await self._run(self._for(caller), op, True, args, kwargs)

    async def system(
        self,
        fn: Callable[Concatenate[SystemContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Run `fn(ctx, ...)` with no caller, in one read-write transaction."""
        return await self._run(self._system_ctx, fn, False, args, kwargs)

    async def system_read(
        self,
        fn: Callable[Concatenate[SystemContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        return await self._run(self._system_ctx, fn, True, args, kwargs)

    async def dispose(self) -> None:
        """Close the database pool and any adapter that holds connections (the HTTP client)."""
        ports = self.ports
        for port in (ports.http, ports.dns, ports.smtp, ports.ai, ports.ai_keys, ports.web, ports.billing):
            close = getattr(port, "aclose", None)
            if close is not None:
                await close()
        await dispose_side_queue(self.engine)
        await self.engine.dispose()

    # ----------------------------------------------------------------------------------------------------

    def _for(
        self, caller: Caller, lowest: Role = "member"
    ) -> Callable[[AsyncConnection], Awaitable[WorkspaceContext]]:
        """Makes the context of a transaction for `caller`, refusing a role below `lowest` once the caller
        is known (inside the transaction, so a credential checked there costs no extra round trip)."""

        async def make(conn: AsyncConnection) -> WorkspaceContext:
            principal = (
                caller if isinstance(caller, Principal) else await caller(await self._system_ctx(conn))
            )
            refuse_lower_role(lowest, principal)
            return self._workspace_ctx(conn, principal)

        return make

    async def _system_ctx(self, conn: AsyncConnection) -> SystemContext:
        return SystemContext(
            conn=conn, settings=self.settings, ports=self.ports, now=self.ports.clock.now(), usage=self.usage
        )

    def _workspace_ctx(self, conn: AsyncConnection, principal: Principal) -> WorkspaceContext:
        return WorkspaceContext(
            conn=conn,
            settings=self.settings,
            ports=self.ports,
            now=self.ports.clock.now(),
            usage=self.usage,
            principal=principal,
        )

    async def _run(
        self,
        make_ctx: Callable[[AsyncConnection], Awaitable[Any]],
        fn: Callable[..., Awaitable[R]],
        read_only: bool,
        args: Any,
        kwargs: Any,
    ) -> R:
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self._writer(read_only), self.engine.connect() as conn:
                    if self.is_sqlite:
                        await conn.execution_options(sqlite_begin="DEFERRED" if read_only else "IMMEDIATE")
                    async with conn.begin():
                        return await fn(await make_ctx(conn), *args, **kwargs)
            except DBAPIError as exc:
                if attempt < _SERIALIZATION_RETRIES and _is_retryable(exc):
                    continue
                raise

    @contextlib.asynccontextmanager
    async def _writer(self, read_only: bool) -> AsyncIterator[None]:
        """SQLite: this process's write transactions take turns, first come first served.

        SQLite has one write lock per database, and a writer that finds it taken polls for it with growing
        sleeps (up to 100 ms) until `busy_timeout`. Under a busy import (a merge, chunks arriving, the
        enrich, search-index, sender and usage workers all writing) a writer that has waited long polls
        least often, and new arrivals kept taking the lock before it: requests failed with "database is
        locked" after 15 s (measured). Queued here instead, each waits only for the transactions ahead of it.
        Other processes (`outreach worker` beside `outreach serve`) still meet at SQLite's lock. A nested
        write transaction in the same task does not queue behind itself.

        Other processes on the same file (`outreach serve`'s worker process) take turns with this one
        through `db/turns.py`, taken once this process's queue has come to the transaction."""
        if read_only or not self.is_sqlite or _holds_write_gate.get():
            yield
            return
        async with self._write_gate:
            token = _holds_write_gate.set(True)
            try:
                if self._turns is None:
                    yield
                    return
                await self._turns.acquire()
                try:
                    yield
                finally:
                    self._turns.release()
            finally:
                _holds_write_gate.reset(token)


class _CallQueue:
    """The calls of one engine's process that wait for a lock (`Endpoint.waits_for`), queued before they
    take a database connection: one at a time per lock name, first come first served (asyncio's locks and
    semaphores are), and at most `QUEUED_CALL_SLOTS` at once. A call waits for its name's turn first, then
    for a slot: a call whose name is busy holds no slot."""

    def __init__(self) -> None:
        self._slots = asyncio.Semaphore(QUEUED_CALL_SLOTS)
        self._names: dict[str, tuple[asyncio.Lock, int]] = {}  # the lock and how many calls use it

    @contextlib.asynccontextmanager
    async def turn(self, name: str | None) -> AsyncIterator[None]:
        if name is None:
            yield
            return
        lock, users = self._names.get(name, (asyncio.Lock(), 0))
        self._names[name] = (lock, users + 1)
        try:
            async with lock, self._slots:
                yield
        finally:
            lock, users = self._names[name]
            if users == 1:
                del self._names[name]
            else:
                self._names[name] = (lock, users - 1)


_call_queues: weakref.WeakKeyDictionary[AsyncEngine, _CallQueue] = weakref.WeakKeyDictionary()
"""One queue of waiting calls per engine, however many runtimes share it (as the write gate)."""


@dataclass(frozen=True)
class _Outside:
    """The runtime's `outreach_core.kernel.endpoint.Outside`: what a pre-transaction step (`Endpoint.prepare`)
    works with. No transaction is open while the step runs."""

    runtime: Runtime
    principal: Principal

    @property
    def ports(self) -> Ports:
        return self.runtime.ports

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    def now(self) -> datetime:
        return self.runtime.ports.clock.now()

    async def read(
        self,
        op: Callable[Concatenate[WorkspaceContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """`op(ctx, ...)` in its own short read-only transaction, as the caller."""
        return await self.runtime.read(self.principal, op, *args, **kwargs)


def _file_turns(engine: AsyncEngine) -> WriteTurns | None:
    """The turn of a SQLite database file (none in memory, on PostgreSQL, or without `fcntl`)."""
    database = engine.url.database
    if (
        engine.dialect.name != "sqlite"
        or not database
        or database == ":memory:"
        or not WriteTurns.available()
    ):
        return None
    return WriteTurns(Path(database).resolve())


def _is_retryable(exc: DBAPIError) -> bool:
    """Serialization failures and deadlocks on PostgreSQL: the whole transaction can simply run again."""
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return code in {"40001", "40P01"}
