"""What a catalogue entry is: `Endpoint` binds one core operation to its route, models, role and MCP tool.

Each domain lists its entries in `<domain>/endpoints.py`; `outreach_core.catalog.all_endpoints()` collects
them. The REST door builds a route, the MCP door builds a tool, and the OpenAPI document is generated from
the same entries, so the three can never drift apart. This module is plain data and types: it imports only
the kernel, so a domain can declare its endpoints without importing the runtime or the catalogue.

Calling convention for operations: `await op(ctx, **path_params, query=<model>, body=<model>)`, where
`query`/`body` are passed only when the endpoint declares them (validated models, never raw dicts). A
confirmation describer (`confirm`) is called the same way and returns the question; `tests/
test_architecture.py` checks every entry's operation, describer and `prepare` against its path, models and
response.

`role` is the lowest role allowed to call the endpoint; `Runtime.call` refuses a lower one with 403
`forbidden` before anything of the operation runs (`refuse_lower_role`). Rules that depend on the target
(an admin may not remove an owner) stay in the operation.

Network I/O (mail login tests, DNS lookups) never runs inside a transaction: SQLite holds its write lock for
the whole of a read-write transaction. An endpoint that needs it declares `prepare`, a step the runtime runs
first, outside any transaction, with an `Outside` and the same arguments; its result reaches the operation
as `prepared=` (see `Runtime.call` and docs/architecture.md).

A call that may wait for a lock other calls of it take (chunks of one import) declares `waits_for`: the
runtime queues such calls in the process before they take a database connection, so that the ones waiting
hold none of the pool's (see `Runtime.call`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Concatenate, Generic, Literal, ParamSpec, Protocol

from pydantic import BaseModel
from typing_extensions import TypeVar

from outreach_core.kernel.context import ROLE_RANK, Principal, Role, SystemContext, WorkspaceContext
from outreach_core.kernel.errors import Forbidden, InvalidInput
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.wire import contains_nul

P = ParamSpec("P")
R = TypeVar("R")
BodyT = TypeVar("BodyT", bound=BaseModel | None, default=None)
"""The operation's `body` model (None: it takes no body)."""
QueryT = TypeVar("QueryT", bound=BaseModel | None, default=None)
"""The operation's `query` model (None: it takes no query)."""
ResponseT = TypeVar("ResponseT", default=Any)
"""What the operation returns, serialized by alias: a model, or `list[Model]`."""

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
Describe = Callable[..., Awaitable[str]]
"""For operations that ask to confirm: `await describe(ctx, **path_params, query=..., body=...)`, called
exactly like the operation (without `prepared`), in a read-only transaction, returns the concrete impact of
the call as a question for the person."""
Prepare = Callable[..., Awaitable[Any]]
"""A pre-transaction step: `await prepare(outside, **path_params, query=..., body=...)` with an `Outside`;
no transaction is open while it runs (it may open short read transactions through `outside.read`). Its
result is passed to the operation as the keyword argument `prepared`."""
WaitsFor = Callable[..., str | None]
"""`waits_for(outside, **path_params, query=..., body=...)`: the name of the lock the call may wait for (the
same for calls that wait for each other), None when it waits for none. Plain, quick, no I/O."""


class Outside(Protocol):
    """What a pre-transaction step (`Endpoint.prepare`) works with: the caller, the ports, the settings, the
    clock, and short read-only transactions on the caller's behalf. No transaction is open while the step
    runs. The runtime passes its own implementation (private to `outreach_core.kernel.runtime`)."""

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


class Background(Protocol):
    """What a background pipeline (a worker's pass over due work) works with: the ports, the settings, and
    transactions with no caller. The runtime is one; pipelines name this instead, so the core never
    imports the runtime."""

    @property
    def ports(self) -> Ports: ...

    @property
    def settings(self) -> Settings: ...

    async def system(
        self,
        fn: Callable[Concatenate[SystemContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """`fn(ctx, ...)` with no caller, in one read-write transaction."""
        ...

    async def system_read(
        self,
        fn: Callable[Concatenate[SystemContext, P], Awaitable[R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """`fn(ctx, ...)` with no caller, in one read-only transaction."""
        ...


@dataclass(frozen=True)
class Answered:
    """What a `prepare` step returns when it has answered the call itself, in transactions of its own: the
    runtime returns `value` and does not run the operation (nor open its transaction). For a call whose
    work, in some cases, writes elsewhere than the database: a SQLite import chunk is queued in a file of
    its own and must not wait for the database's write lock (`kernel/db/side_queue.py`)."""

    value: Any


ROLES: tuple[Role, ...] = ("owner", "admin", "member")
"""Highest first."""


@dataclass(frozen=True)
class Endpoint(Generic[BodyT, QueryT, ResponseT]):
    """One public operation: its REST route (`method`, `path`, `status`), its models, the lowest role that
    may call it and, when `tool` is true, its MCP tool, named like the operation itself (`name`)."""

    method: Method
    path: str
    operation: Callable[..., Awaitable[ResponseT]]
    response: type[ResponseT]
    body: type[BodyT] | None = None
    query: type[QueryT] | None = None
    role: Role = "member"
    tool: bool = True
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False  # a write that changes nothing more when repeated with the same arguments
    open_world: bool = False  # reaches outside the service (HTTP, DNS, SMTP, IMAP, AI, a payment provider)
    title: str | None = None  # the tool's short human title; derived from the name when not given
    toolset: str | None = None  # the MCP tool set; the operation's domain package when not given
    confirm: Describe | None = None
    prepare: Prepare | None = None
    # calls that would wait for one another's lock while holding a database connection (chunks of one
    # import): queued by the runtime before they take one, one at a time per name (`Runtime.call`)
    waits_for: WaitsFor | None = None
    tag: str = "default"
    status: int = 200
    # a picture of the answer (PNG bytes from the response model): the MCP tool adds it as an image content
    # when called with `chart: true` (the query model then has a `chart` field)
    image: Callable[[Any], bytes] | None = None

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
    def description(self) -> str:
        """The docstring with each paragraph on one line (paragraphs stay apart, a list keeps its lines)."""
        return "\n\n".join(_unwrap(p) for p in re.split(r"\n\s*\n", self.doc))

    @property
    def tool_title(self) -> str:
        """A short human title: `title`, or the name as words ("list_campaign_leads": "List campaign
        leads")."""
        return self.title or title_from_name(self.name)

    @property
    def summary(self) -> str:
        """One whole short sentence: the description's first sentence when it is short, else the title."""
        first = first_sentence(self.description.split("\n\n")[0])
        return first if len(first) <= SUMMARY_MAX else f"{self.tool_title}."

    @property
    def toolset_name(self) -> str:
        """The MCP tool set this endpoint belongs to: `toolset`, or the domain package of its operation
        (`outreach_core.campaigns.sequence.set_sequence`: `campaigns`)."""
        if self.toolset:
            return self.toolset
        parts = self.operation.__module__.split(".")
        return parts[1] if len(parts) > 2 and parts[0] == "outreach_core" else parts[0]

    @property
    def path_descriptions(self) -> dict[str, str]:
        """What each path parameter identifies, in words ("The id of the campaign.")."""
        return describe_path_params(self.path)

    @property
    def roles(self) -> list[Role]:
        """The roles allowed to call it, highest first."""
        return allowed_roles(self.role)

    @property
    def role_sentence(self) -> str:
        """Who may call it, as the OpenAPI description and the MCP tool description say."""
        if self.role == "member":
            return "Any member of the workspace may call this."
        return f"Only {_people(self.roles)} may call this."


SUMMARY_MAX = 100
"""The longest first sentence used as a summary; a longer one gives way to the title."""

_WORDS = {"api": "API", "ai": "AI", "ips": "IPs", "ip": "IP", "csv": "CSV", "dns": "DNS", "mcp": "MCP"}
_NOUNS = {
    "api-keys": "API key",
    "apiKeys": "API key",
    "deliveries": "webhook delivery",
    "webhooks": "webhook endpoint",
}


def title_from_name(name: str) -> str:
    """`list_api_keys` as a title: "List API keys"."""
    words = [_WORDS.get(w, w) for w in name.split("_")]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def first_sentence(paragraph: str) -> str:
    """The paragraph up to the first full stop (or ? !) followed by a space or the end, outside brackets
    and backticks (so "e.g. `a.b`" and "(... ). " do not cut it)."""
    depth = 0
    code = False
    for i, ch in enumerate(paragraph):
        if ch == "`":
            code = not code
        elif code:
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch in ".!?" and depth == 0 and (i + 1 == len(paragraph) or paragraph[i + 1] == " "):
            before = paragraph[max(0, i - 4) : i + 1]
            if before.endswith(("e.g.", "i.e.", "etc.")) and i + 1 < len(paragraph):
                continue
            return paragraph[: i + 1]
    return paragraph


def _unwrap(paragraph: str) -> str:
    lines = [line.strip() for line in paragraph.strip().splitlines()]
    if any(line.startswith(("- ", "* ", "|")) or re.match(r"\d+\. ", line) for line in lines):
        return "\n".join(lines)  # a list or a table keeps its lines
    return " ".join(lines)


def _singular(segment: str) -> str:
    if segment in _NOUNS:
        return _NOUNS[segment]
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", segment).replace("-", " ").replace("_", " ").lower()
    if words.endswith("ies"):
        return words[:-3] + "y"
    if words.endswith(("xes", "ses")):
        return words[:-2]
    return words[:-1] if words.endswith("s") else words


def describe_path_params(path: str) -> dict[str, str]:
    """For `/campaigns/{id}/steps/{stepId}`: `id` "The id of the campaign.", `stepId` "The id of the step,
    in the campaign given as `id`."; a parameter that is not an id (`/domains/{domain}`) "The domain's name,
    as listed."."""
    segments = path.strip("/").split("/")
    described: dict[str, str] = {}
    parent: tuple[str, str] | None = None
    for i, segment in enumerate(segments):
        match = re.fullmatch(r"{(\w+)}", segment)
        if match is None:
            continue
        name = match.group(1)
        is_id = name == "id" or name.endswith("Id")
        if name == "id" or not name.endswith("Id"):
            noun = _singular(segments[i - 1]) if i > 0 else name
        else:
            noun = _singular(name[:-2])
        if is_id:
            text = f"The id of the {noun}"
        elif _singular(name) == noun or name == noun:
            text = f"The {noun}'s name, as listed"
        else:
            text = f"The {_singular(name)} of the {noun}"
        if parent is not None:
            text += f", in the {parent[1]} given as `{parent[0]}`"
        described[name] = text + "."
        parent = (name, noun)
    return described


AnyEndpoint = Endpoint[Any, Any, Any]
"""An entry of the catalogue, whatever its models (what the doors and the catalogue handle)."""


@dataclass(frozen=True)
class FileRoute:
    """A file the REST door serves from an endpoint's answer (a PNG chart, a CSV export): `GET path` takes
    the `source` endpoint's path parameters and query, runs it through the runtime like the door runs any
    endpoint (authenticated, role-checked, in its workspace), and streams `render(answer)` as `media_type`.
    `source` need not be catalogued (then it is no MCP tool)."""

    path: str
    source: AnyEndpoint
    media_type: str
    render: Callable[[Any], Iterable[bytes]]
    filename: str | None = None  # offered as the download's name (Content-Disposition)
    summary: str = ""
    """What the file is, one sentence (the OpenAPI summary; the source's description follows)."""

    @property
    def name(self) -> str:
        """The operation id in the OpenAPI document: the source's name and the file's extension
        (`get_analytics_overview_png`)."""
        return f"{self.source.name}_{self.path.rsplit('.', 1)[-1]}"

    @property
    def content_type(self) -> str:
        """The media type without its parameters (`text/csv` of `text/csv; charset=utf-8`)."""
        return self.media_type.split(";", 1)[0].strip()


def allowed_roles(lowest: Role) -> list[Role]:
    """`lowest` and the roles above it, highest first."""
    return [r for r in ROLES if ROLE_RANK[r] >= ROLE_RANK[lowest]]


def refuse_lower_role(lowest: Role, principal: Principal) -> None:
    """Refuse with 403 `forbidden` a caller whose role is below `lowest` (`details.required` lists the
    roles allowed, highest first)."""
    if ROLE_RANK[principal.role] < ROLE_RANK[lowest]:
        raise Forbidden.needs(allowed_roles(lowest), principal.role)


def _people(roles: list[Role]) -> str:
    names = [f"{r}s" for r in roles]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def path_arguments(endpoint: AnyEndpoint, values: Any) -> dict[str, Any]:
    """The path parameters of `endpoint` from `values`, refusing text PostgreSQL could not store."""
    arguments = {p: values[p] for p in endpoint.path_params}
    for name, value in arguments.items():
        if contains_nul(value):
            raise InvalidInput.field(name, "text must not contain NUL (\\u0000) characters")
    return arguments
