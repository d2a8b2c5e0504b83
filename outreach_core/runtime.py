"""The runtime: the one place where a database transaction begins.

Doors and workers never open connections themselves. They call `Runtime.execute(principal, op, ...)` for
work on behalf of a caller, or `Runtime.system(fn, ...)` for work with no caller (authentication, CLI,
workers). Each call is one transaction: committed when the function returns, rolled back when it raises.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from outreach_core.context import Principal, SystemContext, WorkspaceContext
from outreach_core.db.engine import create_engine
from outreach_core.ports import Ports
from outreach_core.settings import Settings
from outreach_core.usage import UsageTracker

P = ParamSpec("P")
R = TypeVar("R")

_SERIALIZATION_RETRIES = 3


class Runtime:
    """Owns the engine, settings and ports; hands each operation a context inside a transaction."""

    def __init__(self, settings: Settings, *, engine: AsyncEngine | None = None, ports: Ports | None = None):
        self.settings = settings
        self.engine = engine or create_engine(settings.database_url)
        self.ports = ports or Ports()
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self.usage = UsageTracker()

    async def execute(
        self,
        principal: Principal,
        op: Callable[Concatenate[WorkspaceContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Run `op(ctx, *args, **kwargs)` for `principal` in one read-write transaction."""
        return await self._run(lambda conn: self._workspace_ctx(conn, principal), op, False, args, kwargs)

    async def read(
        self,
        principal: Principal,
        op: Callable[Concatenate[WorkspaceContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Like `execute`, for operations that only read (no write lock is taken on SQLite)."""
        return await self._run(lambda conn: self._workspace_ctx(conn, principal), op, True, args, kwargs)

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
        await self.engine.dispose()

    # ----------------------------------------------------------------------------------------------------

    def _system_ctx(self, conn: AsyncConnection) -> SystemContext:
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
        make_ctx: Callable[[AsyncConnection], Any],
        fn: Callable[..., Awaitable[R]],
        read_only: bool,
        args: Any,
        kwargs: Any,
    ) -> R:
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self.engine.connect() as conn:
                    if self.is_sqlite:
                        await conn.execution_options(sqlite_begin="DEFERRED" if read_only else "IMMEDIATE")
                    async with conn.begin():
                        return await fn(make_ctx(conn), *args, **kwargs)
            except DBAPIError as exc:
                if attempt < _SERIALIZATION_RETRIES and _is_retryable(exc):
                    continue
                raise


def _is_retryable(exc: DBAPIError) -> bool:
    """Serialization failures and deadlocks on PostgreSQL: the whole transaction can simply run again."""
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return code in {"40001", "40P01"}
