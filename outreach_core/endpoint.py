"""What a catalogue entry is: `Endpoint` binds one core operation to its route, models and MCP tool.

Each domain lists its entries in `<domain>/endpoints.py`; `outreach_core.catalog.all_endpoints()` collects
them. The REST door builds a route, the MCP door builds a tool, and the OpenAPI document is generated from
the same entries, so the three can never drift apart. This module is plain data and types: it imports only
the kernel, so a domain can declare its endpoints without importing the runtime or the catalogue.

Calling convention for operations: `await op(ctx, **path_params, query=<model>, body=<model>)`, where
`query`/`body` are passed only when the endpoint declares them.

Network I/O (mail login tests, DNS lookups) never runs inside a transaction: SQLite holds its write lock for
the whole of a read-write transaction. An endpoint that needs it declares `prepare`, a step the runtime runs
first, outside any transaction, with an `Outside` and the same arguments; its result reaches the operation
as `prepared=` (see `Runtime.call` and docs/architecture.md).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypeVar

from pydantic import BaseModel

from outreach_core.context import Principal, WorkspaceContext
from outreach_core.errors import InvalidInput
from outreach_core.ports import Ports
from outreach_core.settings import Settings
from outreach_core.wire import contains_nul

P = ParamSpec("P")
R = TypeVar("R")

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
Describe = Callable[[WorkspaceContext, dict[str, Any]], Awaitable[str]]
"""For operations that ask to confirm: states the concrete impact of the call (read-only)."""
Prepare = Callable[..., Awaitable[Any]]
"""A pre-transaction step: `await prepare(outside, **path_params, query=..., body=...)` with an `Outside`;
no transaction is open while it runs (it may open short read transactions through `outside.read`). Its
result is passed to the operation as the keyword argument `prepared`."""


class Outside(Protocol):
    """What a pre-transaction step (`Endpoint.prepare`) works with: the caller, the ports, the settings, the
    clock, and short read-only transactions on the caller's behalf. No transaction is open while the step
    runs. The runtime passes its own implementation (private to `outreach_core.runtime`)."""

    @property
    def principal(self) -> Principal: ...

    @property
    def ports(self) -> Ports: ...

    @property
    def settings(self) -> Settings: ...

    def now(self) -> datetime: ...

    async def read(
        self,
        op: Callable[Concatenate[WorkspaceContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """`op(ctx, ...)` in its own short read-only transaction, as the caller."""
        ...


@dataclass(frozen=True)
class Endpoint:
    """One public operation: its REST route (`method`, `path`, `status`), its models and, when `tool` is
    true, its MCP tool, named like the operation itself (`name`)."""

    method: Method
    path: str
    operation: Callable[..., Awaitable[Any]]
    response: Any
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    tool: bool = True
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False  # a write that changes nothing more when repeated with the same arguments
    open_world: bool = False  # reaches outside the service (HTTP, DNS, SMTP, IMAP, AI, a payment provider)
    confirm: Describe | None = None
    prepare: Prepare | None = None
    tag: str = "default"
    status: int = 200

    @property
    def name(self) -> str:
        """The operation's name: also the MCP tool's name and the OpenAPI operation id."""
        return self.operation.__name__

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    @property
    def doc(self) -> str:
        return (self.operation.__doc__ or self.name).strip()

    @property
    def summary(self) -> str:
        return self.doc.splitlines()[0]


def path_arguments(endpoint: Endpoint, values: Any) -> dict[str, Any]:
    """The path parameters of `endpoint` from `values`, refusing text PostgreSQL could not store."""
    arguments = {p: values[p] for p in endpoint.path_params}
    for name, value in arguments.items():
        if contains_nul(value):
            raise InvalidInput.field(name, "text must not contain NUL (\\u0000) characters")
    return arguments
