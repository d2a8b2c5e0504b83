"""Who is calling (`Principal`), the per-operation context (`WorkspaceContext`) and `scoped()`.

Every read or change of a workspace-owned table goes through `scoped(ctx, table)`, which adds the
`workspace_id` filter (or value) itself, so no operation can see another workspace's rows by forgetting a
`where`. Global tables (users, OAuth clients) go through `unscoped(table)`, which refuses workspace-owned
ones. Cross-workspace access (authentication, workers claiming work) uses `system_scope(table)` and is only
allowed in the modules the architecture test lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import Delete, Insert, Select, Table, Update, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from outreach_core.kernel.ports import Ports
from outreach_core.kernel.usage import UsageTracker

if TYPE_CHECKING:
    from outreach_core.kernel.settings import Settings

Role = Literal["owner", "admin", "member"]
AuthKind = Literal["session", "api_key", "oauth"]
ROLE_RANK: dict[str, int] = {"member": 1, "admin": 2, "owner": 3}


@dataclass(frozen=True)
class Principal:
    """An authenticated caller acting in one workspace."""

    user_id: str
    workspace_id: str
    role: Role
    auth: AuthKind
    credential_id: str  # API key id, or OAuth grant id
    client_id: str | None = None  # OAuth client, when auth == "oauth"
    scopes: tuple[str, ...] = ()  # the OAuth access token's scopes (MCP tool sets, docs/mcp.md)


@dataclass
class SystemContext:
    """A transaction without a caller: authentication, CLI set-up, workers."""

    conn: AsyncConnection
    settings: Settings
    ports: Ports
    now: datetime
    usage: UsageTracker


@dataclass
class WorkspaceContext(SystemContext):
    """A transaction on behalf of `principal`, inside its workspace."""

    principal: Principal = field(kw_only=True)

    @property
    def workspace_id(self) -> str:
        return self.principal.workspace_id

    @property
    def user_id(self) -> str:
        return self.principal.user_id

    def has_role(self, *roles: Role) -> bool:
        """Whether the caller has one of `roles`: for rules that depend on the target (an admin may not
        remove an owner). Who may call an operation at all is the catalogue's `Endpoint.role`, checked by
        the runtime before the operation runs."""
        return self.principal.role in roles


def workspace_itself(workspace_id: str, task: str) -> Principal:
    """The workspace acting on its own behalf, no person involved: what workers and signed links (an
    unsubscribe click) run as. `task` names which one, in place of a credential id."""
    return Principal(user_id="", workspace_id=workspace_id, role="owner", auth="api_key", credential_id=task)


def as_workspace(ctx: SystemContext, principal: Principal) -> WorkspaceContext:
    """The same transaction, acting for `principal` (set-up commands that create, then use, a workspace)."""
    return WorkspaceContext(
        conn=ctx.conn,
        settings=ctx.settings,
        ports=ctx.ports,
        now=ctx.now,
        usage=ctx.usage,
        principal=principal,
    )


@dataclass(frozen=True)
class Scoped:
    """Statements on one workspace-owned table, already restricted to one workspace."""

    table: Table
    workspace_id: str

    @property
    def c(self) -> Any:
        return self.table.c

    @property
    def _owner(self) -> Any:
        return scope_column(self.table) == self.workspace_id

    def select(self, *columns: Any) -> Select[Any]:
        stmt = select(*columns) if columns else select(self.table)
        return stmt.where(self._owner)

    def update(self) -> Update:
        return update(self.table).where(self._owner)

    def delete(self) -> Delete:
        return delete(self.table).where(self._owner)

    def insert(self, row: dict[str, Any]) -> Insert:
        """INSERT of one row with `workspace_id` set (any value the caller put there is overwritten)."""
        return insert(self.table).values({**row, "workspace_id": self.workspace_id})

    def insert_many(self, rows: list[dict[str, Any]]) -> tuple[Insert, list[dict[str, Any]]]:
        """`(statement, parameters)` for an executemany INSERT of many rows, `workspace_id` set on each:
        `await conn.execute(*scoped(ctx, t).insert_many(rows))`. (A multi-row VALUES statement would hit
        SQLite's limit on bound parameters for large batches.)"""
        return insert(self.table), [{**r, "workspace_id": self.workspace_id} for r in rows]


def scope_column(table: Table) -> Any:
    """The column that says which workspace a row belongs to (`workspaces.id` for the workspace itself)."""
    return table.c.id if table.name == "workspaces" else table.c.workspace_id


def is_workspace_owned(table: Table) -> bool:
    return table.name == "workspaces" or "workspace_id" in table.c


def scoped(ctx: WorkspaceContext, table: Table) -> Scoped:
    """The only door to a workspace-owned table for an operation acting for a caller."""
    if not is_workspace_owned(table):
        raise TypeError(f"{table.name} is not workspace-owned; use unscoped()")
    return Scoped(table, ctx.workspace_id)


@dataclass(frozen=True)
class Unscoped:
    table: Table

    @property
    def c(self) -> Any:
        return self.table.c

    def select(self, *columns: Any) -> Select[Any]:
        return select(*columns) if columns else select(self.table)

    def update(self) -> Update:
        return update(self.table)

    def delete(self) -> Delete:
        return delete(self.table)

    def insert(self, row: dict[str, Any]) -> Insert:
        return insert(self.table).values(row)

    def insert_many(self, rows: list[dict[str, Any]]) -> tuple[Insert, list[dict[str, Any]]]:
        return insert(self.table), rows


def unscoped(table: Table) -> Unscoped:
    """Statements on a global table (users, OAuth clients). Refuses workspace-owned tables."""
    if is_workspace_owned(table):
        raise TypeError(f"{table.name} is workspace-owned; use scoped()")
    return Unscoped(table)


def system_scope(table: Table) -> Unscoped:
    """Cross-workspace statements for authentication, set-up and workers (architecture test allow-list)."""
    return Unscoped(table)
