"""Set-based building blocks: INSERT ... SELECT into workspace-owned tables, and row ids made in SQL.

`insert_from_select` is `INSERT ... SELECT` on a workspace-owned table with the caller's `workspace_id`
always supplied by this helper (never by the source query), the same guarantee `scoped(...).insert()` gives
for literal rows. `row_ids` makes a distinct id for every row such a statement inserts, in SQL, so
inserting a row per lead never needs the lead ids in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ARRAY, ColumnElement, Insert, Select, Table, any_, bindparam, func, literal
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from outreach_core.context import WorkspaceContext, is_workspace_owned
from outreach_core.ids import new_id

_ULID = 26
_TIME_CHARS = 10  # a ULID's first 10 characters are its millisecond timestamp, the last 16 its randomness
_RANDOM_CHARS = _ULID - _TIME_CHARS


def insert_from_select(
    ctx: WorkspaceContext,
    table: Table,
    columns: Sequence[str],
    source: Select[Any],
    *,
    skip_duplicates: bool = False,
) -> Insert:
    """`INSERT INTO table (columns..., workspace_id) SELECT <source>, :workspace_id`.

    `source` selects exactly `columns`, in order, and must itself read only the caller's workspace (build
    it from `scoped()` tables). The workspace column is added here, so no row can land in another one.
    `skip_duplicates` adds `ON CONFLICT DO NOTHING`: a row that a concurrent transaction inserted first is
    skipped instead of failing the statement (the result's rowcount says how many went in).
    """
    if not is_workspace_owned(table):
        raise TypeError(f"{table.name} is not workspace-owned")
    if "workspace_id" in columns:
        raise ValueError("workspace_id is supplied by insert_from_select itself")
    owner = literal(ctx.workspace_id, table.c.workspace_id.type)
    target = [*columns, "workspace_id"]
    if not skip_duplicates:
        return table.insert().from_select(target, source.add_columns(owner))
    dialect_insert = postgresql_insert if ctx.conn.dialect.name == "postgresql" else sqlite_insert
    return dialect_insert(table).from_select(target, source.add_columns(owner)).on_conflict_do_nothing()


def row_ids(prefix: str, lead_id: ColumnElement[str], *, salted: bool = False) -> ColumnElement[str]:
    """An id per inserted row: `prefix_` + the time part of a fresh id + the random part of the lead's id.

    Rows of one statement differ by their lead (80 random bits each); statements differ by their time part.
    The result has the same shape as `new_id(prefix)` (it sorts by creation time). `salted` adds 6 more
    random characters for rows that one transaction may insert twice for the same lead within a millisecond
    (timers); such ids are longer and never shown to callers.
    """
    fresh = new_id("x")[2:]
    head = f"{prefix}_{fresh[:_TIME_CHARS]}" + (fresh[_TIME_CHARS : _TIME_CHARS + 6] if salted else "")
    tail = func.substr(lead_id, func.length(lead_id) - (_RANDOM_CHARS - 1))
    return literal(head) + tail


def one_of(ctx: WorkspaceContext, column: ColumnElement[Any], values: Sequence[Any]) -> ColumnElement[bool]:
    """`column IN (values)`; on PostgreSQL `column = ANY(:array)`, one parameter instead of one per value
    (rendering and casting 5,000 bound parameters costs ~15 ms of Python per statement)."""
    if ctx.conn.dialect.name == "postgresql":
        return column == any_(bindparam(None, list(values), type_=ARRAY(column.type)))
    return column.in_(values)
