"""What the generated isolation and role test uses: callers at every door, a workspace's stored rows, the
ids of another workspace inside tool arguments, and the id inputs a tool declares."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, get_args

import httpx
from mcp import Client
from pydantic import BaseModel
from sqlalchemy import select

from outreach_core.kernel.context import is_workspace_owned, scope_column
from outreach_core.kernel.db.tables import metadata
from outreach_core.kernel.endpoint import AnyEndpoint
from outreach_core.kernel.errors import OutreachError
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.runtime import Runtime
from tests.conftest import WorkspaceHandle
from tests.doors import call_mcp, call_rest, normalize
from tests.oauth.helpers import connect, register

DOORS = ("rest", "mcp-key", "mcp-oauth")
"""REST with an API key (REST takes no OAuth tokens), MCP with an API key and with an OAuth access token."""
VOLATILE_COLUMNS = {"last_used_at"}
"""Written by the usage bookkeeping (not by the calls under test) whenever a credential is used."""


def _codes(cls: type[OutreachError]) -> Iterator[type[OutreachError]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _codes(sub)


STATUS_OF_CODE = {cls.code: cls.status for cls in _codes(OutreachError)}


@dataclass(frozen=True)
class Answer:
    """What a door answered: the HTTP status (for MCP, the status of the error code; 200 for a result)
    and the JSON body or structured result."""

    status: int
    body: Any

    @property
    def code(self) -> str | None:
        return self.body["error"]["code"] if self.status >= 400 else None


@dataclass(frozen=True)
class Person:
    """A member of a workspace with both credentials: an API key and an OAuth access token (an app they
    connected)."""

    handle: WorkspaceHandle
    oauth_token: str


async def person(runtime: Runtime, handle: WorkspaceHandle) -> Person:
    client_id = await register(runtime, "Isolation and roles")
    return Person(handle, (await connect(runtime, handle.api_key, client_id)).access_token)


class Doors:
    """One person's three ways in, with the MCP sessions open: `await doors.call(door, tool, args)`."""

    def __init__(self, http: httpx.AsyncClient, who: Person, sessions: dict[str, Client]):
        self.http, self.who, self.sessions = http, who, sessions

    async def call(self, door: str, tool: str, args: dict[str, Any]) -> Answer:
        if door == "rest":
            status, body = await call_rest(self.http, self.who.handle.headers, tool, args)
            return Answer(status, body)
        is_error, body = await call_mcp(self.sessions[door], tool, args)
        return Answer(STATUS_OF_CODE[body["error"]["code"]] if is_error else 200, body)


@asynccontextmanager
async def doors(http: httpx.AsyncClient, mcp_session: Any, who: Person) -> AsyncIterator[Doors]:
    async with AsyncExitStack() as stack:
        sessions = {
            "mcp-key": await stack.enter_async_context(mcp_session(who.handle.api_key)),
            "mcp-oauth": await stack.enter_async_context(mcp_session(who.oauth_token)),
        }
        yield Doors(http, who, sessions)


async def stored_rows(runtime: Runtime, workspace_id: str) -> dict[str, list[str]]:
    """Every row of every workspace-owned table that belongs to the workspace (sorted, as JSON text,
    without the usage bookkeeping's columns): equal before and after means nothing of it changed."""

    async def read(ctx: Any) -> dict[str, list[str]]:
        rows: dict[str, list[str]] = {}
        for table in metadata.sorted_tables:
            if not is_workspace_owned(table):
                continue
            columns = [c for c in table.c if c.name not in VOLATILE_COLUMNS]
            found = await ctx.conn.execute(select(*columns).where(scope_column(table) == workspace_id))
            rows[table.name] = sorted(json.dumps(dict(r._mapping), default=str) for r in found)
        return rows

    return await runtime.system_read(read)


NAMED_BY = {"sending_domains": "domain"}
"""Tables whose rows tools name by another column than an id (`DELETE /domains/{domain}`)."""


def identifying_values(rows: dict[str, list[str]]) -> tuple[set[str], set[str]]:
    """(ids, other identifying text) of stored rows: every `id` and `user_id`, and the addresses (lead,
    member and mailbox emails, suppressed values)."""
    ids: set[str] = set()
    texts: set[str] = set()
    for table, table_rows in rows.items():
        for text in table_rows:
            row = json.loads(text)
            ids.update(str(row[k]) for k in ("id", "user_id") if row.get(k))
            if table in NAMED_BY:  # objects a tool names by another key than an id
                ids.add(str(row[NAMED_BY[table]]))
            texts.update(str(row[k]) for k in ("email", "to_email", "value") if isinstance(row.get(k), str))
    return ids, texts


def paths_holding(value: Any, wanted: set[str], prefix: str = "") -> set[str]:
    """The dotted argument paths (lists are transparent) whose value is one of `wanted`."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in paths_holding(v, wanted, f"{prefix}{k}.")}
    if isinstance(value, list):
        return {p for v in value for p in paths_holding(v, wanted, prefix)}
    return {prefix.rstrip(".")} if isinstance(value, str) and value in wanted else set()


def replaced(value: Any, ids: set[str], fresh: dict[str, str]) -> Any:
    """`value` with each of `ids` replaced by a new id of the same prefix that names nothing (`fresh`
    keeps the replacements, so one id is replaced the same way everywhere)."""
    if isinstance(value, dict):
        return {k: replaced(v, ids, fresh) for k, v in value.items()}
    if isinstance(value, list):
        return [replaced(v, ids, fresh) for v in value]
    if isinstance(value, str) and value in ids:
        if "_" not in value and "." in value:  # a domain name (NAMED_BY): a fresh one that names nothing
            return fresh.setdefault(value, f"{new_id('d').split('_', 1)[1]}.com")
        return fresh.setdefault(value, new_id(value.split("_", 1)[0]))
    return value


def shown_in(body: Any, values: set[str]) -> set[str]:
    """Which of `values` appear in `body` as whole words (`p2@x.test` is not shown by `p12@x.test`)."""
    text = json.dumps(body)
    return {v for v in values if v in text and re.search(rf"(?<![\w.+-]){re.escape(v)}(?![\w.-])", text)}


def strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {s for v in value.values() for s in strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in strings(v)}
    return {value} if isinstance(value, str) else set()


def comparable(answer: Answer, named: Iterable[str] = ()) -> tuple[int, Any]:
    """An answer with what differs between calls normalized (the ids in `named`, other ids, timestamps,
    secrets; lastUsedAt and request timings only by presence)."""
    text = json.dumps(answer.body)
    for value in named:
        text = text.replace(value, "<named>")
    return answer.status, normalize(_presence(json.loads(text)))


def _presence(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: ("<set>" if k in ("lastUsedAt", "ms", "durationMs") and v is not None else _presence(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_presence(v) for v in value]
    return value


ID_NAMES = ("id", "ids")


def id_inputs(endpoint: AnyEndpoint) -> set[str]:
    """The arguments with which a tool names objects of the workspace, as dotted argument paths: its path
    parameters and every field of its query and body models (at any depth) called `id`/`ids` or ending in
    `_id`/`_ids`."""
    found = set(endpoint.path_params)
    for model in (endpoint.query, endpoint.body):
        if model is not None:
            found |= _id_fields(model, "", ())
    return found


def _id_fields(model: type[BaseModel], prefix: str, seen: tuple[type[BaseModel], ...]) -> set[str]:
    found: set[str] = set()
    if model in seen:
        return found
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        if name in ID_NAMES or name.endswith(("_id", "_ids")):
            found.add(key)
        for inner in _models_in(field.annotation):
            found |= _id_fields(inner, key + ".", (*seen, model))
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    stack, models = [annotation], []
    while stack:
        current = stack.pop()
        if isinstance(current, type) and issubclass(current, BaseModel):
            models.append(current)
        stack.extend(get_args(current))
    return models
