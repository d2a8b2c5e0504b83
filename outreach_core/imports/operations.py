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
from outreach_core.kernel.db.tables import import_chunks, import_queue, lead_imports, lists
from outreach_core.kernel.errors import InvalidState, NotFound, PayloadTooLarge
from outreach_core.kernel.ids import new_id
from outreach_core.lists.store import resolve_import_list


async def import_leads(ctx: WorkspaceContext, body: ImportIn) -> LeadImport:
    """Import leads in chunks of up to 5,000 rows. Omit `importId` on the first call and pass the returned id
    on every later chunk; set `final: true` on the last one. A chunk is accepted at once and counted in
    `rows` and `queued`; the service then normalises and deduplicates the addresses within the import, skips
    suppressed ones, counts invalid ones, and skips or updates leads already in the workspace (`existing`).
    `list` puts every imported lead on an existing list (`{id}`) or a new one (`{name}`). Poll `get_import`:
    `queued` falls to 0 as rows are merged, then email providers and countries are filled in (and addresses
    verified when `verify` is true) until `status` is `done`."""
    if body.row_count() > MAX_IMPORT_ROWS:
        raise PayloadTooLarge(
            f"At most {MAX_IMPORT_ROWS:,} rows per call; split the file into chunks.",
            {"rows": body.row_count(), "limit": MAX_IMPORT_ROWS},
        )
    await require_active_plan(ctx)
    imp = await _open_import(ctx, body)
    content = body.model_dump(mode="json", exclude={"import_id", "rows"}, by_alias=True, exclude_none=True)
    content["rows"] = body.wire_rows()
    chunk_hash = _chunk_hash(content)
    chunks = scoped(ctx, import_chunks)
    seen_chunk = (
        await ctx.conn.execute(
            chunks.select(import_chunks.c.chunk_hash).where(
                import_chunks.c.import_id == imp.id, import_chunks.c.chunk_hash == chunk_hash
            )
        )
    ).first()
    if seen_chunk is not None:
        return await get_import(ctx, imp.id)
    if imp.final_at is not None or imp.status == "failed":
        why = "already had its final chunk" if imp.final_at is not None else "has failed"
        raise InvalidState(
            f"This import {why}; start a new one without importId.",
            {"importId": imp.id, "status": imp.status},
        )
    await ctx.conn.execute(
        chunks.insert({"import_id": imp.id, "chunk_hash": chunk_hash, "created_at": ctx.now})
    )
    rows = [stored_row(row) for row in content["rows"]]  # the hash above stays the wire form's
    if rows:
        await _queue(ctx, imp.id, rows)
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
        scoped(ctx, lead_imports).update().where(lead_imports.c.id == imp.id).values(**values)
    )
    if body.final:
        await close_if_merged(ctx, imp.id)
    return await get_import(ctx, imp.id)


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
        # Locked (PostgreSQL) so that chunks of one import sent in parallel queue one after the other; the
        # import worker does not hold this row while it merges (see `import_merge._claim`).
        row = (
            await ctx.conn.execute(
                table.select().where(lead_imports.c.id == body.import_id).with_for_update()
            )
        ).one_or_none()
        if row is None:
            raise NotFound("import", body.import_id)
        return row
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
    return [LeadImport.from_row(r) for r in (await ctx.conn.execute(stmt)).all()]


__all__ = ["get_import", "import_leads", "list_imports"]
