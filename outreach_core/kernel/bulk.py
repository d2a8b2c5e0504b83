"""Set-based building blocks: many rows inserted at once (`insert_rows`), INSERT ... SELECT into
workspace-owned tables, row ids made in SQL, and one UPDATE for many rows each with its own values
(`update_each`).

`insert_from_select` is `INSERT ... SELECT` on a workspace-owned table with the caller's `workspace_id`
always supplied by this helper (never by the source query), the same guarantee `scoped(...).insert()` gives
for literal rows. `row_ids` makes a distinct id for every row such a statement inserts, in SQL, so
inserting a row per lead never needs the lead ids in Python.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeVar

from sqlalchemy import (
    ARRAY,
    Boolean,
    ColumnElement,
    CompoundSelect,
    Insert,
    Integer,
    Select,
    String,
    Table,
    Update,
    any_,
    bindparam,
    func,
    literal,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.selectable import Join, TableValuedAlias
from sqlalchemy.types import TypeEngine

from outreach_core.kernel.context import SystemContext, WorkspaceContext, is_workspace_owned
from outreach_core.kernel.ids import new_id

T = TypeVar("T")

_ULID = 26
_TIME_CHARS = 10  # a ULID's first 10 characters are its millisecond timestamp, the last 16 its randomness
_RANDOM_CHARS = _ULID - _TIME_CHARS


async def insert_rows(ctx: WorkspaceContext, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert many rows of a workspace-owned table (`workspace_id` set on each), the fastest way per engine.

    Values go through each column type's bind processor (UTC timestamps, JSON), then straight to the driver:
    SQLite gets one executemany of plain tuples; PostgreSQL gets a binary `COPY` (asyncpg), which fires the
    statement-level triggers (lead counters) once. Bypassing SQLAlchemy's per-row parameter building halves
    the Python time of a 5,000-row import chunk. Every row must have the same keys."""
    if not rows:
        return
    keys = [k for k in rows[0] if k != "workspace_id"]
    columns = [*keys, "workspace_id"]
    dialect = ctx.conn.dialect
    processors = [
        (i, proc)
        for i, name in enumerate(keys)
        if (proc := table.c[name].type.dialect_impl(dialect).bind_processor(dialect)) is not None
    ]
    # Built column by column, in C where it can be (itemgetter, zip): per row and column in Python, this
    # was a third of a 5,000-row merge part's Python time.
    by_row = [*map(itemgetter(*keys), rows)] if len(keys) > 1 else [(row[keys[0]],) for row in rows]
    by_column: list[Sequence[Any]] = [*zip(*by_row, strict=True)]
    for i, proc in processors:
        by_column[i] = _processed(by_column[i], proc)
    by_column.append([ctx.workspace_id] * len(rows))
    records: list[tuple[Any, ...]] = [*zip(*by_column, strict=True)]
    if dialect.name == "postgresql":
        await _copy(ctx, table, columns, records)
        return
    placeholders = ", ".join("?" * len(columns))
    quoted = ", ".join(dialect.identifier_preparer.quote(c) for c in columns)
    await ctx.conn.exec_driver_sql(f"INSERT INTO {table.name} ({quoted}) VALUES ({placeholders})", records)


_PLAIN: set[tuple[str, tuple[str, ...]]] = set()


async def copy_records(
    ctx: WorkspaceContext, table: Table, columns: Sequence[str], records: Sequence[tuple[Any, ...]]
) -> None:
    """PostgreSQL: COPY rows of a workspace-owned table given as tuples in the order of `columns`, as the
    driver takes them (`workspace_id` appended here to each). For columns whose types convert nothing on
    the way to the driver (checked, once per table and columns): the caller builds the tuples in the loop
    it already runs, with no dict a row and no pass over the rows by `insert_rows` (issue 31)."""
    if not records:
        return
    dialect = ctx.conn.dialect
    key = (table.name, tuple(columns))
    if key not in _PLAIN:
        # a Boolean's processor only checks for a bool, which asyncpg's encoder checks as well
        converting = [
            name
            for name in columns
            if not isinstance(table.c[name].type, Boolean)
            and table.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        ]
        if dialect.name != "postgresql" or "workspace_id" in columns or converting:
            raise ValueError(f"copy_records: not for {dialect.name}, workspace_id or {converting}")
        _PLAIN.add(key)
    owner = (ctx.workspace_id,)
    await _copy(ctx, table, [*columns, "workspace_id"], [r + owner for r in records])


async def _copy(
    ctx: WorkspaceContext, table: Table, columns: Sequence[str], records: Sequence[tuple[Any, ...]]
) -> None:
    """PostgreSQL: a binary `COPY` of `records` (driver-ready tuples in the order of `columns`) through
    asyncpg, in the connection's transaction."""
    await ctx.conn.exec_driver_sql("SELECT 1")  # the driver's transaction begins on first use
    raw = await ctx.conn.get_raw_connection()
    await raw.driver_connection.copy_records_to_table(  # type: ignore[union-attr]
        table.name, records=records, columns=list(columns)
    )


def _processed(values: Sequence[Any], proc: Callable[[Any], Any]) -> list[Any]:
    """A column's values through its type's bind processor, each distinct object once (an import's
    `created_at` and `enriched_at` are one object each, a datetime costs 3 µs), and every empty dict or
    list once (`custom`, whose JSON text cost 2.6 µs a row)."""
    distinct = dict(zip(map(id, values), values, strict=True))  # the objects stay alive: ids are stable
    if len(distinct) == 1:
        return [proc(values[0])] * len(values)
    done: dict[int, Any] = {}
    empty: dict[type, Any] = {}
    for key, value in distinct.items():
        kind = type(value)
        if kind in (dict, list) and not value:
            if kind not in empty:
                empty[kind] = proc(value)
            done[key] = empty[kind]
        else:
            done[key] = proc(value)
    return [*map(done.__getitem__, map(id, values))]


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


def one_of(ctx: SystemContext, column: ColumnElement[Any], values: Sequence[Any]) -> ColumnElement[bool]:
    """`column IN (values)` with one parameter instead of one per value (rendering and casting 5,000 bound
    parameters costs ~15 ms of Python per statement): on PostgreSQL `column = ANY(:array)`, on SQLite, for
    text values, `column IN (SELECT value FROM json_each(:json))`, which SQLite still answers by probing the
    column's index once per value."""
    if ctx.conn.dialect.name == "postgresql":
        return column == any_(bindparam(None, list(values), type_=ARRAY(column.type)))
    if all(isinstance(v, str) for v in values):
        return column.in_(select(listed(ctx, values).c.value))
    return column.in_(values)


def listed(ctx: SystemContext, values: Sequence[str]) -> TableValuedAlias:
    """Text `values` as a table of one column, `value`, bound as one parameter: on PostgreSQL
    `unnest(:array) AS given(value)`, on SQLite `json_each(:json)`."""
    if ctx.conn.dialect.name == "postgresql":
        array = bindparam(None, list(values), type_=ARRAY(String()))
        return func.unnest(array).table_valued("value").render_derived(name="given")
    return func.json_each(bindparam(None, json.dumps(list(values)), type_=String())).table_valued("value")


async def try_lock(ctx: SystemContext, name: str) -> bool:
    """Take a lock named `name` until the transaction ends, unless another transaction holds it (then False,
    at once). PostgreSQL: a transaction-level advisory lock on a 64-bit hash of the name. SQLite runs one
    writer at a time, so a write transaction already holds every such lock."""
    if ctx.conn.dialect.name != "postgresql":
        return True
    key = func.hashtextextended(literal(name), 0)
    return bool((await ctx.conn.execute(select(func.pg_try_advisory_xact_lock(key)))).scalar())


async def count_upto(ctx: SystemContext, rows: Select[Any] | CompoundSelect[Any], limit: int) -> int:
    """How many rows `rows` selects, counting no further than `limit`: the database stops reading at the
    `limit`-th match (`SELECT count(*) FROM (... LIMIT n)`)."""
    capped = rows.limit(limit).subquery()
    return int((await ctx.conn.execute(select(func.count()).select_from(capped))).scalar_one())


async def count_sample(
    ctx: SystemContext, rows: Select[Any], size: int, condition: Callable[[Any], ColumnElement[bool]]
) -> tuple[int, int]:
    """Of the first `size` rows `rows` selects, how many there are and how many meet `condition` (built
    from the sample's columns): a cheap look at how common something is."""
    sample = rows.limit(size).subquery()
    stmt = select(func.count(), func.count().filter(condition(sample.c))).select_from(sample)
    sampled, meeting = (await ctx.conn.execute(stmt)).one()
    return int(sampled), int(meeting)


class OuterLoopJoin(Join):
    """An inner join of a table (left) and a from-clause whose left side is read first: SQLite's
    `CROSS JOIN`, the one join order its planner keeps (elsewhere a plain `JOIN`)."""

    inherit_cache = True


@compiles(OuterLoopJoin, "sqlite")
def _cross_join(join: OuterLoopJoin, compiler: Any, **kw: Any) -> str:
    # the plain join's text (and its bookkeeping of joined tables), with the first " JOIN ", the one after
    # the left table, made a CROSS JOIN
    plain: str = compiler.visit_join(join, **kw)
    return plain.replace(" JOIN ", " CROSS JOIN ", 1)


class byte_length(FunctionElement[int]):
    """The length of a text in bytes of UTF-8: `octet_length` (SQLite before 3.43 has none)."""

    type = Integer()
    inherit_cache = True


@compiles(byte_length)
def _octet_length(element: byte_length, compiler: Any, **kw: Any) -> str:
    return f"octet_length({compiler.process(element.clauses, **kw)})"


@compiles(byte_length, "sqlite")
def _blob_length(element: byte_length, compiler: Any, **kw: Any) -> str:
    return f"length(CAST({compiler.process(element.clauses, **kw)} AS BLOB))"


class holds(FunctionElement[bool]):
    """Whether a text holds another, byte for byte (`strpos` / `instr`): unlike `LIKE '%...%'`, no planner
    takes it for a trigram index lookup, so it is tested on each row a scan reads."""

    type = Boolean()
    inherit_cache = True


@compiles(holds)
def _strpos(element: holds, compiler: Any, **kw: Any) -> str:
    text, part = (compiler.process(c, **kw) for c in element.clauses)
    return f"(strpos({text}, {part}) > 0)"


@compiles(holds, "sqlite")
def _instr(element: holds, compiler: Any, **kw: Any) -> str:
    text, part = (compiler.process(c, **kw) for c in element.clauses)
    return f"(instr({text}, {part}) > 0)"


def equals_any(column: ColumnElement[str], *values: str) -> ColumnElement[bool]:
    """`column IN (...)` spelled as ORs of literal values, for `update_each` conditions: SQLite runs those
    as an executemany, which cannot take expanding IN parameters."""
    return or_(*(column == v for v in values))


Values = Mapping[str, ColumnElement[Any]]
"""The current row's values inside `update_each`, by name (the keys of its `rows`)."""


async def update_each(
    ctx: SystemContext,
    update: Update,
    rows: Sequence[Mapping[str, Any]],
    *,
    key: str = "id",
    where: Callable[[Values], Sequence[ColumnElement[bool]]] | None = None,
    values: Callable[[Values], Mapping[str, Any]] | None = None,
    types: Mapping[str, TypeEngine[Any]] | None = None,
    reuse: str | None = None,
) -> None:
    """Update many rows, each with its own values, in one statement.

    `update` is the scoped statement to extend (`scoped(ctx, t).update()` or a worker's
    `system_scope(t).update()`); each of `rows` names the row by `key` and carries the values (all rows have
    the same keys). By default every other key sets the column of that name; `values(v)` replaces that with
    expressions over the row's values `v` (e.g. `coalesce`), and `where(v)` adds conditions (names that are
    not columns need a type in `types`).

    PostgreSQL gets `UPDATE ... FROM unnest(arrays) AS v(...)`: one statement, so statement-level triggers
    (the campaign lead counters) fire once instead of once per row, and one round trip. SQLite gets an
    executemany of the same statement (in-process, so already cheap).

    `reuse`: a name under which the statement is built once per process and dialect, for a caller that runs
    the same update many times a second (the tracking recorder; building it was ~40 % of that transaction's
    CPU). Only for an `update` without bound values of its own (`system_scope(t).update()`) and the same
    `where`/`values` every time: the first call's statement is used for every later call with that name.
    """
    if not rows:
        return
    table = update.table
    assert isinstance(table, Table)
    names = list(rows[0])
    dialect = ctx.conn.dialect.name
    memo = (reuse, dialect, tuple(names)) if reuse is not None else None
    statement = _REUSED.get(memo) if memo is not None else None
    if statement is None:
        typed = {n: (types or {}).get(n) if n not in table.c else table.c[n].type for n in names}
        statement = _each_statement(update, table, typed, names, key, where, values, dialect)
        if memo is not None:
            _REUSED[memo] = statement
    if dialect == "postgresql":
        await ctx.conn.execute(statement, {f"u_{n}": [r[n] for r in rows] for n in names})
    else:
        await ctx.conn.execute(statement, [{f"u_{n}": r[n] for n in names} for r in rows])


_REUSED: dict[tuple[str, str, tuple[str, ...]], Update] = {}


def _each_statement(
    update: Update,
    table: Table,
    typed: Mapping[str, TypeEngine[Any] | None],
    names: Sequence[str],
    key: str,
    where: Callable[[Values], Sequence[ColumnElement[bool]]] | None,
    values: Callable[[Values], Mapping[str, Any]] | None,
    dialect: str,
) -> Update:
    """`update_each`'s statement with its values left to the execution: PostgreSQL's arrays
    (`u_<name>`, one list each), or SQLite's executemany parameters."""
    if dialect == "postgresql":
        arrays = [bindparam(f"u_{n}", type_=ARRAY(_required(typed, n))) for n in names]
        derived = func.unnest(*arrays).table_valued(*names).render_derived(name="v")
        return _extend(update, table, {n: derived.c[n] for n in names}, names, key, where, values)
    given = {n: bindparam(f"u_{n}", type_=typed[n]) for n in names}
    return _extend(update, table, given, names, key, where, values)


def _required(typed: Mapping[str, TypeEngine[Any] | None], name: str) -> TypeEngine[Any]:
    found = typed[name]
    if found is None:
        raise TypeError(f"update_each: {name!r} is not a column; give its type in `types`")
    return found


def _extend(
    update: Update,
    table: Table,
    given: Values,
    names: Sequence[str],
    key: str,
    where: Callable[[Values], Sequence[ColumnElement[bool]]] | None,
    values: Callable[[Values], Mapping[str, Any]] | None,
) -> Update:
    sets = values(given) if values else {n: given[n] for n in names if n != key}
    return update.where(table.c[key] == given[key], *(where(given) if where else ())).values(dict(sets))


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """`items` in consecutive slices of at most `size` (values per statement, far below the engines'
    limits on bound parameters)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def insert_skipping_duplicates(ctx: SystemContext, table: Table) -> Insert:
    """`INSERT ... ON CONFLICT DO NOTHING` on `table`, to run as an executemany with rows that carry their
    own `workspace_id` (bookkeeping across workspaces: the webhook fan-out). A row that would break a unique
    constraint is skipped instead of failing the statement."""
    dialect_insert = postgresql_insert if ctx.conn.dialect.name == "postgresql" else sqlite_insert
    return dialect_insert(table).on_conflict_do_nothing()
