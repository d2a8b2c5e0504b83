"""SQLite: the import queue in a file of its own, `<database>-imports`, beside the database.

SQLite has one writer per file. With the queue in the database itself, a chunk request (`import_leads`)
waited for the merge transaction in progress in the worker process (about half a second a part), so chunks
were accepted at the merge's pace. Here a chunk of an existing import is written to this file only (its
own write lock, never held by a merge), and the merge moves it into the database:

1. the request appends a part: its header (`side_parts`: sequence number, chunk hash, row counts, `final`)
   and its rows (`side_rows`), in one transaction of this file;
2. the merge reads the oldest part, merges it into the database and, in the same transaction there,
   records it as merged: the import's counters grow by the part's rows and `lead_imports.merged_seq`
   becomes its sequence number (the marker). It commits;
3. then the part's rows are deleted here (`release_merged_parts`), its header marked not pending.

A kill between 2 and 3 leaves a part here at or below the marker: the marker decides, such a part is
released, never merged again.

Headers stay as long as their import (deleted with it, `drop_orphan_parts`): a retried chunk is found here
by its hash whether or not it was merged, and a reader that combines both files reads the markers from the
database, then from here every header above them, released or not (`parts_above`): a part at or below the
marker it read is in the database's counters, one above it is counted from its header, and a header never
disappears while its import exists, so each part is counted once whatever happened between the two reads.
(Reading only the parts not yet released, a reader whose database snapshot predates step 2 and whose side
read follows step 3 missed the part: the runtime's transaction may take its snapshot when it authenticates
the caller, long before the operation reads this file; `tests/leads/test_import_side_queue.py`.) The
worker's readers (`pending_parts`) read under the database's write lock, where no merge runs beside them.

An empty final chunk is recorded in the database at once, and noted here (`mark_final`) in the same lock
of this file, so that a chunk whose request read the database before that commit is still refused.

PostgreSQL keeps `import_queue`: its requests never wait for a merge.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import weakref
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import (
    Boolean,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    and_,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from outreach_core.kernel.db.engine import create_engine
from outreach_core.kernel.db.types import UtcDateTime
from outreach_core.kernel.settings import sqlite_path

side_metadata = MetaData()
"""The side file's tables: not the database's (`tables.metadata`), no migrations; created on first use."""

side_parts = Table(
    "side_parts",
    side_metadata,
    Column("import_id", String(40), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),  # merge order within the import
    Column("workspace_id", String(40), nullable=False),
    Column("chunk_hash", String(64), nullable=False),
    Column("rows", Integer, nullable=False),  # rows queued (the chunk's rows)
    Column("client_invalid", Integer, nullable=False),
    Column("client_duplicates", Integer, nullable=False),
    Column("final", Boolean, nullable=False),
    Column("pending", Boolean, nullable=False),  # its rows are still in `side_rows`
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_side_parts_hash", "import_id", "chunk_hash", unique=True),
    Index("ix_side_parts_pending", "workspace_id", "created_at", sqlite_where=Column("pending")),
)

side_rows = Table(
    "side_rows",
    side_metadata,
    Column("import_id", String(40), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("rows", LargeBinary, nullable=False),  # the part's rows, storage form, as JSON (orjson)
)


@dataclass(frozen=True)
class PartHeader:
    """A part as readers count it."""

    import_id: str
    seq: int
    workspace_id: str
    rows: int
    client_invalid: int
    client_duplicates: int
    final: bool
    created_at: datetime


class SideQueue:
    """The side file of one SQLite database, for this process."""

    def __init__(self, path: Path | None) -> None:
        # an in-memory database (one runtime's, never shared with another process) gets a file of its own
        # in a temporary directory, removed with the engine (`dispose_side_queue`)
        self._temporary = (
            None if path is not None else tempfile.TemporaryDirectory(prefix="outreach-imports-")
        )
        self.path = path if self._temporary is None else Path(self._temporary.name) / "memory-imports"
        self.engine: AsyncEngine = create_engine(f"sqlite+aiosqlite:///{path}")
        self._created = False
        # this process's writers queue here, instead of polling SQLite's lock with growing sleeps
        self._write_gate = asyncio.Lock()

    async def _ensure(self) -> None:
        if not self._created:
            # under the file's write lock: the server and its worker process may both come first
            async with self.engine.connect() as conn:
                await conn.execution_options(sqlite_begin="IMMEDIATE")
                async with conn.begin():
                    await conn.run_sync(_create_tables)
            self._created = True

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[AsyncConnection]:
        """A read transaction of the side file (its snapshot is taken at its first read)."""
        await self._ensure()
        async with self.engine.connect() as conn:
            await conn.execution_options(sqlite_begin="DEFERRED")
            async with conn.begin():
                yield conn

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction of the side file, its write lock taken up front (`BEGIN IMMEDIATE`)."""
        await self._ensure()
        async with self._write_gate, self.engine.connect() as conn:
            await conn.execution_options(sqlite_begin="IMMEDIATE")
            async with conn.begin():
                yield conn


def _create_tables(conn: Connection) -> None:
    side_metadata.create_all(conn)


_queues: weakref.WeakKeyDictionary[AsyncEngine, SideQueue] = weakref.WeakKeyDictionary()
"""One side queue per engine of the database, as the runtime keeps its write gate: its engine, pool and
lock live in the event loop of the database's engine, and go with it."""


def side_queue(engine: AsyncEngine) -> SideQueue:
    """The side file of the SQLite database `engine` writes, `<database>-imports` (an in-memory database,
    for which the service keeps no state across connections anyway, gets one in a temporary directory)."""
    queue = _queues.get(engine)
    if queue is None:
        queue = _queues[engine] = SideQueue(_side_path(engine))
    return queue


async def dispose_side_queue(engine: AsyncEngine) -> None:
    """Close the side file's connections of the database `engine` (with the engine itself)."""
    queue = _queues.pop(engine, None)
    if queue is not None:
        await queue.engine.dispose()
        if queue._temporary is not None:
            queue._temporary.cleanup()


def _side_path(engine: AsyncEngine) -> Path | None:
    """`<database>-imports`; None for an in-memory database."""
    main = sqlite_path(engine.url.render_as_string(hide_password=False))
    return None if main is None else Path(f"{main}-imports")


def side_queue_of(conn: AsyncConnection) -> SideQueue:
    """The side file of the database `conn` is connected to."""
    return side_queue(conn.engine)


# --- the request ------------------------------------------------------------------------------------------


async def seen_chunk(conn: AsyncConnection, import_id: str, chunk_hash: str) -> bool:
    """Whether the import already received this chunk (merged or not)."""
    found = await conn.execute(
        select(side_parts.c.seq).where(
            side_parts.c.import_id == import_id, side_parts.c.chunk_hash == chunk_hash
        )
    )
    return found.first() is not None


async def has_final_part(conn: AsyncConnection, import_id: str) -> bool:
    """Whether the import's final chunk is here (merged or not)."""
    found = await conn.execute(
        select(side_parts.c.seq).where(side_parts.c.import_id == import_id, side_parts.c.final).limit(1)
    )
    return found.first() is not None


async def _next_seq(conn: AsyncConnection, import_id: str) -> int:
    """The import's next part's sequence number (under the side file's write lock)."""
    last = (
        await conn.execute(select(func.max(side_parts.c.seq)).where(side_parts.c.import_id == import_id))
    ).scalar()
    return 0 if last is None else int(last) + 1


async def append_part(conn: AsyncConnection, header: PartHeader, chunk_hash: str, rows: list[Any]) -> None:
    """Append a part (`header.seq` is replaced by the import's next sequence number)."""
    seq = await _next_seq(conn, header.import_id)
    values = {**header.__dict__, "seq": seq, "chunk_hash": chunk_hash, "pending": True}
    await conn.execute(insert(side_parts).values(values))
    payload = orjson.dumps(rows, option=orjson.OPT_NON_STR_KEYS)
    await conn.execute(insert(side_rows).values(import_id=header.import_id, seq=seq, rows=payload))


async def mark_final(conn: AsyncConnection, header: PartHeader, chunk_hash: str) -> None:
    """Note here that the import's final chunk came without rows and was recorded in the database at once
    (its counters and `final_at` are there): a header with nothing to merge or count (`rows` and the
    client's counts 0, not pending), so that a chunk of the import whose request read the database before
    that commit still finds the final chunk here (`has_final_part`) and is refused."""
    empty = {**header.__dict__, "rows": 0, "client_invalid": 0, "client_duplicates": 0, "final": True}
    seq = await _next_seq(conn, header.import_id)
    await conn.execute(
        insert(side_parts).values({**empty, "seq": seq, "chunk_hash": chunk_hash, "pending": False})
    )


# --- readers ----------------------------------------------------------------------------------------------


async def pending_parts(
    conn: AsyncConnection, *, workspace_id: str | None = None, import_ids: Iterable[str] = ()
) -> list[PartHeader]:
    """The headers of parts not released yet (of a workspace, or of the given imports), oldest first. The
    caller drops those at or below their import's marker (merged, not released yet)."""
    stmt = select(*_header_columns()).where(side_parts.c.pending)
    if workspace_id is not None:
        stmt = stmt.where(side_parts.c.workspace_id == workspace_id)
    ids = list(import_ids)
    if ids:
        stmt = stmt.where(side_parts.c.import_id.in_(ids))
    rows = (await conn.execute(stmt.order_by(side_parts.c.created_at, side_parts.c.seq))).all()
    return [PartHeader(**r._mapping) for r in rows]


async def parts_above(conn: AsyncConnection, markers: dict[str, int | None]) -> list[PartHeader]:
    """The headers of the given imports' parts above their marker (`lead_imports.merged_seq` as the caller
    read it, None before the first merge), released or not, oldest first: what the caller's snapshot of the
    database has not counted yet. Headers stay as long as their import, so whatever the order and age of the
    two snapshots no part is missed or counted twice (a part released since the caller read its marker is
    still here, and above it)."""
    if not markers:
        return []
    c = side_parts.c
    ranges = [
        c.import_id == import_id if marker is None else and_(c.import_id == import_id, c.seq > marker)
        for import_id, marker in markers.items()
    ]
    rows = (
        await conn.execute(select(*_header_columns()).where(or_(*ranges)).order_by(c.created_at, c.seq))
    ).all()
    return [PartHeader(**r._mapping) for r in rows]


async def last_chunks(conn: AsyncConnection, import_ids: list[str]) -> dict[str, datetime]:
    """The time of each import's last chunk received here (stale-import detection)."""
    rows = await conn.execute(
        select(side_parts.c.import_id, func.max(side_parts.c.created_at))
        .where(side_parts.c.import_id.in_(import_ids))
        .group_by(side_parts.c.import_id)
    )
    return {str(i): t for i, t in rows.all()}


def above_marker(parts: Iterable[PartHeader], markers: dict[str, int | None]) -> list[PartHeader]:
    """The parts not merged yet: above their import's marker (`lead_imports.merged_seq`, None before the
    first merge). Parts of imports not in `markers` (not in the database) are left out."""
    return [
        p
        for p in parts
        if p.import_id in markers and (markers[p.import_id] is None or p.seq > markers[p.import_id])  # type: ignore[operator]
    ]


# --- the merge --------------------------------------------------------------------------------------------


async def part_rows(conn: AsyncConnection, header: PartHeader) -> list[dict[str, Any]]:
    """A pending part's rows."""
    payload = (
        await conn.execute(
            select(side_rows.c.rows).where(
                side_rows.c.import_id == header.import_id, side_rows.c.seq == header.seq
            )
        )
    ).scalar_one()
    rows: list[dict[str, Any]] = orjson.loads(payload)
    return rows


async def release_parts(queue: SideQueue, markers: dict[str, int]) -> int:
    """Delete the rows of the parts at or below their import's marker (merged), keep their headers as not
    pending. Returns how many parts were released."""
    if not markers:
        return 0
    async with queue.writing() as conn:
        released = 0
        for import_id, marker in markers.items():
            at_or_below = and_(side_parts.c.import_id == import_id, side_parts.c.seq <= marker)
            await conn.execute(
                delete(side_rows).where(side_rows.c.import_id == import_id, side_rows.c.seq <= marker)
            )
            done = await conn.execute(
                update(side_parts).where(at_or_below, side_parts.c.pending).values(pending=False)
            )
            released += int(done.rowcount or 0)
        return released


async def drop_imports(queue: SideQueue, import_ids: Iterable[str]) -> None:
    """Delete everything of these imports (gone from the database: deleted with their workspace)."""
    ids = sorted(import_ids)
    if not ids:
        return
    async with queue.writing() as conn:
        for start in range(0, len(ids), 500):  # within SQLite's limit of bound parameters
            batch = ids[start : start + 500]
            await conn.execute(delete(side_rows).where(side_rows.c.import_id.in_(batch)))
            await conn.execute(delete(side_parts).where(side_parts.c.import_id.in_(batch)))


async def all_import_ids(queue: SideQueue) -> set[str]:
    """Every import with a header here."""
    async with queue.reading() as conn:
        return {str(i) for i in (await conn.execute(select(side_parts.c.import_id).distinct())).scalars()}


def _header_columns() -> list[Any]:
    c = side_parts.c
    return [
        c.import_id,
        c.seq,
        c.workspace_id,
        c.rows,
        c.client_invalid,
        c.client_duplicates,
        c.final,
        c.created_at,
    ]


__all__ = [
    "PartHeader",
    "SideQueue",
    "above_marker",
    "all_import_ids",
    "append_part",
    "dispose_side_queue",
    "drop_imports",
    "has_final_part",
    "last_chunks",
    "mark_final",
    "part_rows",
    "parts_above",
    "pending_parts",
    "release_parts",
    "seen_chunk",
    "side_queue",
    "side_queue_of",
]
