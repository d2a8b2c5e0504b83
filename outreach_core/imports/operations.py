"""Chunked lead import: `POST /leads/import`, `GET /leads/imports`, `GET /leads/imports/{id}`.

A chunk is validated and its rows queued (`import_queue`) in the request; the import worker merges them
into the workspace's leads in the order they arrived (`imports/merge.py`). Counters are exact, and
`rows = created + updated + skipped + duplicates + suppressed + invalid + overLimit + queued` holds at every
point:
- `rows`: rows received, plus the rows the client dropped itself (`clientInvalid`, `clientDuplicates`);
- `queued`: rows received and not merged yet; the other counters are final once it is 0;
- `invalid`: rows without a usable address, plus `clientInvalid`;
- `duplicates`: rows whose address already appeared earlier in this import (same or earlier chunk), plus
  `clientDuplicates`;
- `suppressed`: address or domain on the suppression list (not stored);
- `skipped` / `updated`: the address was already a lead of the workspace (`existing` skip / update);
- `created`: new leads;
- `overLimit`: new addresses not imported because the plan's contacts limit was reached;
- `undeliverable`: later, leads of this import that verification found invalid.

A chunk is identified by the SHA-256 of its content: sending the same chunk again (a client retry) changes
nothing and returns the import as it is. After the final chunk the import stays `importing` until its
queue is merged, then moves to `enriching` and `done`.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from sqlalchemy import func

from outreach_core.billing.plan import require_active_plan
from outreach_core.imports.merge import close_if_merged
from outreach_core.imports.schemas import MAX_IMPORT_ROWS, ImportIn, LeadImport, LeadImports, stored_row
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.side_queue import (
    PartHeader,
    above_marker,
    append_part,
    has_final_part,
    mark_final,
    parts_above,
    pending_parts,
    seen_chunk,
    side_queue_of,
)
from outreach_core.kernel.db.tables import import_chunks, import_queue, lead_imports, lists
from outreach_core.kernel.endpoint import Answered, Outside
from outreach_core.kernel.errors import InvalidState, NotFound, PayloadTooLarge
from outreach_core.kernel.ids import new_id
from outreach_core.lists.store import resolve_import_list


async def import_leads(ctx: WorkspaceContext, body: ImportIn, prepared: Answered | None = None) -> LeadImport:
    """Import leads in chunks of up to 5,000 rows. Omit `importId` on the first call and pass the returned id
    on every later chunk; set `final: true` on the last one. A chunk is accepted at once and counted in
    `rows` and `queued`; the service then normalises and deduplicates the addresses within the import, skips
    suppressed ones, counts invalid ones, and skips or updates leads already in the workspace (`existing`).
    `list` puts every imported lead on an existing list (`{id}`) or a new one (`{name}`). Poll `get_import`:
    `queued` falls to 0 as rows are merged, then email providers and countries are filled in (and addresses
    verified when `verify` is true) until `status` is `done`."""
    # `prepared`: the doors' SQLite chunks with rows of an existing import are answered by
    # `prepare_import_leads` without this transaction; other callers (the CSV import, the CLI) get here.
    _refuse_too_large(body)
    await require_active_plan(ctx)
    if ctx.conn.dialect.name == "sqlite":
        return await _import_beside(ctx, body, writing=True)
    imp = await _open_import(ctx, body)
    content = _content(body)
    chunk_hash = _chunk_hash(content)
    if not await _seen_in_database(ctx, imp.id, chunk_hash):
        _refuse_closed(imp, final_seen=False)
        await _record_chunk(ctx, imp.id, body, chunk_hash, [stored_row(row) for row in content["rows"]])
    return await get_import(ctx, imp.id)


async def prepare_import_leads(outside: Outside, body: ImportIn) -> Answered | None:
    """SQLite, a chunk with rows of an existing import: queued in the side file and answered here, in a
    read-only transaction of the database, so that the request never waits for the merge's write lock (see
    `kernel/db/side_queue.py`). Otherwise None: `import_leads` runs in a read-write transaction."""
    if body.import_id is None or not body.row_count() or not outside.settings.is_sqlite:
        return None
    return Answered(await outside.read(queue_chunk_beside, body))


def chunk_waits_for(outside: Outside, body: ImportIn) -> str | None:
    """The lock a chunk request waits for while it holds a database connection (`Endpoint.waits_for`: the
    runtime queues such requests before they take one). SQLite: a chunk with rows of an existing import
    (`prepare_import_leads`) reads the database, then waits for the side file's write lock, one chunk at a
    time whatever its import. The others (a first chunk, a chunk without rows) write the database and take
    the side file's lock inside that transaction: they queue at the database's write gate before taking a
    connection already, and queued here they would hold the side file's turn while they wait for the merge's
    write lock, which the chunks behind them must never wait for. PostgreSQL: a chunk of an existing import
    locks the import's row (`_existing_import`), so chunks of one import are taken one after the other; a
    first chunk waits for nothing."""
    if body.import_id is None:
        return None
    if outside.settings.is_sqlite:
        return "import chunks: the side file" if body.row_count() else None
    return f"import chunks: {body.import_id}"


async def queue_chunk_beside(ctx: WorkspaceContext, body: ImportIn) -> LeadImport:
    """SQLite: a chunk of an existing import queued in the side file only; the database is only read."""
    _refuse_too_large(body)
    await require_active_plan(ctx)
    return await _import_beside(ctx, body, writing=False)


def _refuse_too_large(body: ImportIn) -> None:
    if body.row_count() > MAX_IMPORT_ROWS:
        raise PayloadTooLarge(
            f"At most {MAX_IMPORT_ROWS:,} rows per call; split the file into chunks.",
            {"rows": body.row_count(), "limit": MAX_IMPORT_ROWS},
        )


def _refuse_closed(imp: Any, *, final_seen: bool) -> None:
    """409 for a chunk after the import's final one, or after it failed."""
    if imp.final_at is not None or final_seen or imp.status == "failed":
        why = "has failed" if imp.status == "failed" else "already had its final chunk"
        raise InvalidState(
            f"This import {why}; start a new one without importId.",
            {"importId": imp.id, "status": imp.status},
        )


async def _record_chunk(
    ctx: WorkspaceContext, import_id: str, body: ImportIn, chunk_hash: str, rows: list[dict[str, Any]]
) -> None:
    """A chunk recorded in the database: its hash, its rows queued (`import_queue`), the import's counters,
    and, for the final one, `final_at` (the import moves on at once when nothing is queued)."""
    await ctx.conn.execute(
        scoped(ctx, import_chunks).insert(
            {"import_id": import_id, "chunk_hash": chunk_hash, "created_at": ctx.now}
        )
    )
    if rows:
        await _queue(ctx, import_id, rows)
    client_dropped = body.client_invalid + body.client_duplicates
    values: dict[str, Any] = {
        "rows": lead_imports.c.rows + len(rows) + client_dropped,
        "queued": lead_imports.c.queued + len(rows),
        "invalid": lead_imports.c.invalid + body.client_invalid,
        "duplicates": lead_imports.c.duplicates + body.client_duplicates,
    }
    if body.final:
        values["final_at"] = ctx.now
    await ctx.conn.execute(
        scoped(ctx, lead_imports).update().where(lead_imports.c.id == import_id).values(**values)
    )
    if body.final:
        await close_if_merged(ctx, import_id)


async def _import_beside(ctx: WorkspaceContext, body: ImportIn, *, writing: bool) -> LeadImport:
    """SQLite: the chunk appended to the side file, in its write transaction; an existing import is read
    from the database after that lock is taken (in a read or a write transaction of the database, `writing`:
    either is correct, see `side_queue`). A chunk already received (its hash, here or in `import_chunks`)
    changes nothing. A chunk without rows, when the import has no part waiting, is recorded in the database
    at once (`writing` only), so that an empty final chunk ends the import as it does on PostgreSQL."""
    if body.import_id is None:
        imp = await _open_import(ctx, body)
    async with side_queue_of(ctx.conn).writing() as side:
        # a new import's part is committed here before the database: should the database's commit fail,
        # the merge drops the part of an import that does not exist (`merge._merge_side_part`)
        if body.import_id is not None:
            imp = await _existing_import(ctx, body.import_id)
        content = _content(body)
        chunk_hash = _chunk_hash(content)
        if not await seen_chunk(side, imp.id, chunk_hash) and not await _seen_in_database(
            ctx, imp.id, chunk_hash
        ):
            _refuse_closed(imp, final_seen=await has_final_part(side, imp.id))
            rows = [stored_row(row) for row in content["rows"]]  # the hash stays the wire form's
            waiting = above_marker(await pending_parts(side, import_ids=[imp.id]), {imp.id: imp.merged_seq})
            if writing and not rows and not waiting:
                await _record_chunk(ctx, imp.id, body, chunk_hash, rows)
                if body.final:
                    await mark_final(side, _header(ctx, imp.id, body, 0), chunk_hash)
            else:
                await append_part(side, _header(ctx, imp.id, body, len(rows)), chunk_hash, rows)
    return await get_import(ctx, imp.id)


def _header(ctx: WorkspaceContext, import_id: str, body: ImportIn, rows: int) -> PartHeader:
    return PartHeader(
        import_id=import_id,
        seq=0,  # set by `append_part`
        workspace_id=ctx.workspace_id,
        rows=rows,
        client_invalid=body.client_invalid,
        client_duplicates=body.client_duplicates,
        final=body.final,
        created_at=ctx.now,
    )


async def _seen_in_database(ctx: WorkspaceContext, import_id: str, chunk_hash: str) -> bool:
    """Whether the import already received this chunk, as recorded in the database (PostgreSQL; SQLite: a
    chunk without rows, or one queued before the side file)."""
    found = await ctx.conn.execute(
        scoped(ctx, import_chunks)
        .select(import_chunks.c.chunk_hash)
        .where(import_chunks.c.import_id == import_id, import_chunks.c.chunk_hash == chunk_hash)
    )
    return found.first() is not None


def _content(body: ImportIn) -> dict[str, Any]:
    """The chunk as hashed: every field but `importId`, rows in wire form."""
    content = body.model_dump(mode="json", exclude={"import_id", "rows"}, by_alias=True, exclude_none=True)
    content["rows"] = body.wire_rows()
    return content


async def get_import(ctx: WorkspaceContext, id: str) -> LeadImport:
    """An import with its counters and status (importing → enriching → done)."""
    rows = await _imports(ctx, lead_imports.c.id == id)
    if not rows:
        raise NotFound("import", id)
    return rows[0]


async def list_imports(ctx: WorkspaceContext) -> LeadImports:
    """The workspace's imports, newest first (the last 100)."""
    return LeadImports(imports=await _imports(ctx, None, limit=100))


# --- the queue ------------------------------------------------------------------------------------------


async def _queue(ctx: WorkspaceContext, import_id: str, rows: list[dict[str, Any]]) -> None:
    """The chunk's rows (storage form) as one queued part, after the import's parts still waiting. One part
    per chunk: the
    worker merges a part per transaction, and smaller parts, though they would shorten each SQLite write
    transaction, cost 50 % more per row at a million leads (every merge rewrites the index pages it
    touches; measured with 1,000-row parts)."""
    queue = scoped(ctx, import_queue)
    last = (
        await ctx.conn.execute(
            queue.select(func.max(import_queue.c.seq)).where(import_queue.c.import_id == import_id)
        )
    ).scalar()
    seq = 0 if last is None else last + 1
    await ctx.conn.execute(
        queue.insert({"import_id": import_id, "seq": seq, "rows": rows, "created_at": ctx.now})
    )


# --- import rows -------------------------------------------------------------------------------------------


async def _open_import(ctx: WorkspaceContext, body: ImportIn) -> Any:
    table = scoped(ctx, lead_imports)
    if body.import_id is not None:
        return await _existing_import(ctx, body.import_id)
    list_id = None
    if body.target_list is not None:
        list_id, _ = await resolve_import_list(ctx, body.target_list.id, body.target_list.name)
    import_id = new_id("imp")
    await ctx.conn.execute(
        table.insert(
            {
                "id": import_id,
                "file_name": body.file_name,
                "list_id": list_id,
                "status": "importing",
                "verify": body.verify,
                "existing": body.existing,
                "created_at": ctx.now,
            }
        )
    )
    return (await ctx.conn.execute(table.select().where(lead_imports.c.id == import_id))).one()


async def _existing_import(ctx: WorkspaceContext, import_id: str) -> Any:
    # Locked (PostgreSQL) so that chunks of one import sent in parallel queue one after the other; the
    # import worker does not hold this row while it merges (see `import_merge._claim`).
    row = (
        await ctx.conn.execute(
            scoped(ctx, lead_imports).select().where(lead_imports.c.id == import_id).with_for_update()
        )
    ).one_or_none()
    if row is None:
        raise NotFound("import", import_id)
    return row


def _chunk_hash(content: dict[str, Any]) -> str:
    """SHA-256 of the chunk as compact JSON with sorted keys (orjson: UTF-8 as is, where `json.dumps`, used
    before issue 31, escaped non-ASCII: a chunk with such text retried across that upgrade is new)."""
    return hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()


async def _imports(ctx: WorkspaceContext, where: Any, *, limit: int | None = None) -> list[LeadImport]:
    table = scoped(ctx, lead_imports)
    stmt = table.select(lead_imports, lists.c.name.label("list_name")).outerjoin(
        lists, lists.c.id == lead_imports.c.list_id
    )
    if where is not None:
        stmt = stmt.where(where)
    stmt = stmt.order_by(lead_imports.c.created_at.desc(), lead_imports.c.id.desc())
    if limit is not None:
        stmt = stmt.limit(limit)
    found = (await ctx.conn.execute(stmt)).all()
    if ctx.conn.dialect.name != "sqlite" or not found:
        return [LeadImport.from_row(r) for r in found]
    # SQLite: the parts in the side file above the markers this snapshot of the database holds, released
    # or not: each part counted once whatever happened between the two reads (`side_queue.parts_above`);
    # read after this request's own chunk was committed there, so its answer includes it
    async with side_queue_of(ctx.conn).reading() as side:
        waiting = await parts_above(side, {str(r.id): r.merged_seq for r in found})
    queued: dict[str, list[PartHeader]] = {}
    for part in waiting:
        queued.setdefault(part.import_id, []).append(part)
    return [_with_parts(r, queued.get(r.id, [])) for r in found]


def _with_parts(row: Any, parts: list[PartHeader]) -> LeadImport:
    """An import's counters with its parts still in the side file: received (`rows`, `queued`, and the rows
    the client dropped itself), not merged."""
    if not parts:
        return LeadImport.from_row(row)
    client_invalid = sum(p.client_invalid for p in parts)
    client_duplicates = sum(p.client_duplicates for p in parts)
    rows = sum(p.rows for p in parts)
    return LeadImport.from_row(
        row,
        rows=row.rows + rows + client_invalid + client_duplicates,
        queued=row.queued + rows,
        invalid=row.invalid + client_invalid,
        duplicates=row.duplicates + client_duplicates,
    )


__all__ = [
    "chunk_waits_for",
    "get_import",
    "import_leads",
    "list_imports",
    "prepare_import_leads",
    "queue_chunk_beside",
]
