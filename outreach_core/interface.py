"""The catalogue of public operations: one entry per route and MCP tool, shared by both doors.

Each `Endpoint` names a core operation and the models it takes and returns. The REST door builds a route,
the MCP door builds a tool, and the OpenAPI document is generated from the same entries, so the three can
never drift apart. The core stays door-free: this module holds plain data only.

Calling convention for operations: `await op(ctx, **path_params, query=<model>, body=<model>)`, where
`query`/`body` are passed only when the endpoint declares them.

Network I/O (mail login tests, DNS lookups) never runs inside a transaction: SQLite holds its write lock for
the whole of a read-write transaction. An endpoint that needs it declares `prepare`, a step the runtime runs
first, outside any transaction, with the same arguments; its result reaches the operation as `prepared=`
(see `Runtime.call` and docs/architecture.md).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from outreach_core.context import WorkspaceContext
from outreach_core.errors import InvalidInput
from outreach_core.wire import contains_nul

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
Describe = Callable[[WorkspaceContext, dict[str, Any]], Awaitable[str]]
"""For operations that ask to confirm: states the concrete impact of the call (read-only)."""
Prepare = Callable[..., Awaitable[Any]]
"""A pre-transaction step: `await prepare(outside, **path_params, query=..., body=...)` with an
`outreach_core.runtime.Outside`; no transaction is open while it runs (it may open short read transactions
through `outside.read`). Its result is passed to the operation as the keyword argument `prepared`."""


@dataclass(frozen=True)
class Endpoint:
    method: Method
    path: str
    operation: Callable[..., Awaitable[Any]]
    response: Any
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    tool: str | None = None
    read_only: bool = False
    destructive: bool = False
    confirm: Describe | None = None
    prepare: Prepare | None = None
    tag: str = "default"
    status: int = 200

    @property
    def name(self) -> str:
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


def all_endpoints() -> list[Endpoint]:
    """Every endpoint of every domain, in a stable order."""
    from outreach_core.api_keys.interface import ENDPOINTS as api_keys
    from outreach_core.campaigns.interface import ENDPOINTS as campaigns
    from outreach_core.labels.interface import ENDPOINTS as labels
    from outreach_core.leads.interface import ENDPOINTS as leads
    from outreach_core.lists.interface import ENDPOINTS as lists
    from outreach_core.mailboxes.interface import ENDPOINTS as mailboxes
    from outreach_core.oauth.interface import ENDPOINTS as oauth
    from outreach_core.sending.interface import ENDPOINTS as sending
    from outreach_core.suppressions.interface import ENDPOINTS as suppressions
    from outreach_core.verification.interface import ENDPOINTS as verification
    from outreach_core.webhooks.interface import ENDPOINTS as webhooks
    from outreach_core.workspace.interface import ENDPOINTS as workspace

    return [
        *workspace,
        *api_keys,
        *oauth,
        *leads,
        *verification,
        *lists,
        *labels,
        *suppressions,
        *campaigns,
        *sending,
        *mailboxes,
        *webhooks,
    ]
