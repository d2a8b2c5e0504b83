"""The import worker's half of a lead import: queued rows merged into the workspace's leads.

`import_leads` only validates a chunk and queues its rows (`import_queue`, one part per chunk; on SQLite in
a file of its own, `side_queue`), so a chunk is accepted at the speed of one append. This module merges one
part per transaction, in the order the parts arrived: addresses are normalised, deduplicated within the
import and against the workspace, checked against the suppression list, then created, updated or skipped,
and put on the import's list. Each merge adds its outcomes to the import's counters and takes its rows
off `queued`, in the same transaction.

Duplicates across parts: an address this import created is a lead whose `import_id` is the import; an
address it met without creating it (skipped, updated, suppressed) is kept in `import_seen` until the import
is complete. A million new leads therefore cost no second index of a million addresses.

PostgreSQL merges a part set-based through a temporary staging table (`merge_staged`); SQLite, in-process
with no round trips to save, looks the part's addresses up and inserts the new leads with one executemany.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func

from outreach_core.enrichment.pipeline import enrich_new_leads
from outreach_core.imports.lead_rows import (
    Row,
    compared_columns,
    lead_changes,
    new_lead_rows,
    row_dicts,
)
from outreach_core.imports.schemas import stored_row
from outreach_core.imports.staged_merge import merge_staged
from outreach_core.kernel.bulk import insert_rows, one_of, try_lock, update_each
from outreach_core.kernel.context import (
    Principal,
    SystemContext,
    WorkspaceContext,
    scoped,
    system_scope,
    workspace_itself,
)
from outreach_core.kernel.db.maintenance import refresh_grown_statistics, refresh_lead_statistics
from outreach_core.kernel.db.side_queue import (
    above_marker,
    all_import_ids,
    drop_imports,
    last_chunks,
    part_rows,
    pending_parts,
    release_parts,
    side_queue_of,
)
from outreach_core.kernel.db.tables import (
    import_chunks,
    import_queue,
    import_seen,
    lead_imports,
    leads,
)
from outreach_core.kernel.ids import new_ids
from outreach_core.leads.contacts import contacts_room
from outreach_core.targets.lead_counts import count_imported_leads
from outreach_core.targets.lead_owner import hold_workspace
from outreach_core.targets.list_members import add_known_leads_to_list
from outreach_core.targets.rules import (
    normalize_email,
)
from outreach_core.targets.suppression import suppressed_emails

OUTCOMES = ("created", "updated", "skipped", "duplicates", "suppressed", "invalid", "over_limit")
_CLAIM_CANDIDATES = 20
_ORPHAN_BATCH = 500
STATISTICS_FROM = 5_000
"""The planner statistics of `leads` are refreshed whenever an import has doubled the leads it created,
from this many on (5,000, 10,000, 20,000 ...; nine times for a million)."""
GROWN_TABLES = ("list_leads", "import_seen", "import_queue")
"""The other tables a merge grows, whose statistics it keeps (`refresh_grown_statistics`)."""


def import_principal(workspace_id: str) -> Principal:
    """What the import worker acts as: the workspace itself."""
    return workspace_itself(workspace_id, "import")


async def queued_import_workspaces(ctx: SystemContext, limit: int) -> list[str]:
    """Up to `limit` workspaces with import rows waiting to be merged, the longest waiting first (SQLite:
    parts queued before the side file first, then the side file's; a part merged but not released yet
    counts as waiting until `release_merged_parts` has run)."""
    waiting: list[str] = []
    if ctx.conn.dialect.name == "sqlite":
        async with side_queue_of(ctx.conn).reading() as side:
            waiting = list(dict.fromkeys(p.workspace_id for p in await pending_parts(side)))
    q = system_scope(import_queue)
    rows = await ctx.conn.execute(
        q.select(import_queue.c.workspace_id)
        .group_by(import_queue.c.workspace_id)
        .order_by(func.min(import_queue.c.created_at))
        .limit(limit)
    )
    return list(dict.fromkeys([*(str(ws) for ws in rows.scalars().all()), *waiting]))[:limit]


async def release_merged_parts(ctx: SystemContext) -> int:
    """SQLite, after merges committed: delete from the side file the rows of the parts at or below their
    import's marker (`lead_imports.merged_seq`), merged already; also the parts a merge committed just
    before a kill. Returns how many parts were released. The side file is read first: a marker read
    afterwards is at least as recent, and a marker only grows, so no part above it is released."""
    queue = side_queue_of(ctx.conn)
    async with queue.reading() as side:
        parts = await pending_parts(side)
    if not parts:
        return 0
    markers = await _markers(ctx, {p.import_id for p in parts})
    # only imports with a part to release: no write of the side file (a request may be waiting for its
    # lock) when every part waits
    merged: dict[str, int] = {}
    for part in parts:
        marker = markers.get(part.import_id)
        if marker is not None and part.seq <= marker:
            merged[part.import_id] = marker
    return await release_parts(queue, merged)


async def drop_orphan_parts(ctx: SystemContext) -> int:
    """SQLite: delete from the side file what is left of imports no longer in the database (deleted with
    their workspace). In a write transaction of the database: an import being created writes the side
    file before its commit, holding the database's write lock, so one missing here is gone for good.
    Returns how many imports were dropped."""
    queue = side_queue_of(ctx.conn)
    known = sorted(await all_import_ids(queue))
    gone: set[str] = set()
    for start in range(0, len(known), _ORPHAN_BATCH):  # within SQLite's limit of bound parameters
        batch = set(known[start : start + _ORPHAN_BATCH])
        gone |= batch - (await _markers(ctx, batch)).keys()
    await drop_imports(queue, gone)
    return len(gone)


async def _markers(ctx: SystemContext, import_ids: set[str]) -> dict[str, int | None]:
    """The imports' markers (`merged_seq`), for those still in the database."""
    if not import_ids:
        return {}
    rows = await ctx.conn.execute(
        system_scope(lead_imports)
        .select(lead_imports.c.id, lead_imports.c.merged_seq)
        .where(lead_imports.c.id.in_(sorted(import_ids)))
    )
    return {str(r.id): r.merged_seq for r in rows.all()}


async def merge_queued_rows(ctx: WorkspaceContext, analyse_after: set[str] | None = None) -> int:
    """Merge the workspace's oldest queued part of an import into its leads; returns the rows merged (0 when
    nothing is queued, or other workers are merging every import that has some).

    `analyse_after` (the import worker, PostgreSQL): the planner statistics this merge makes due are not
    refreshed in its transaction but named there (`leads`), for the caller to refresh after the commit on
    another connection, beside the next part's merge (`refresh_import_statistics`). Without it (SQLite, and
    callers that merge once) they are refreshed here, in the transaction."""
    import_id = await _claim(ctx)
    if import_id is None:
        return await _merge_side_part(ctx) if ctx.conn.dialect.name == "sqlite" else 0
    # PostgreSQL: the workspace held until the commit (`leads` has no foreign key to it, migration 0035); a
    # workspace deleted meanwhile has no part left to merge (its queue went with it)
    if not await hold_workspace(ctx):
        return 0
    queue = scoped(ctx, import_queue)
    part = (
        await ctx.conn.execute(
            queue.select(import_queue.c.seq, import_queue.c.rows, import_queue.c.merged_rows)
            .where(import_queue.c.import_id == import_id)
            .order_by(import_queue.c.seq)
            .limit(1)
        )
    ).first()
    if part is None:  # merged by another worker between the listing and the claim
        return 0
    imp = (
        await ctx.conn.execute(scoped(ctx, lead_imports).select().where(lead_imports.c.id == import_id))
    ).one()
    # `merged_rows`: a part SQLite had begun to merge in slices before the side file (migration 0036)
    rows = [stored_row(row) for row in part.rows[part.merged_rows :]]
    counts = await _merge(ctx, imp, rows)
    this_part = (import_queue.c.import_id == imp.id, import_queue.c.seq == part.seq)
    await ctx.conn.execute(queue.delete().where(*this_part))
    await _refresh_statistics(ctx, imp, counts, analyse_after)
    # The import's row is written last: from here to the commit, a chunk of this import waits for it.
    values: dict[str, Any] = {name: getattr(lead_imports.c, name) + counts[name] for name in OUTCOMES}
    values["queued"] = lead_imports.c.queued - len(rows)
    values["merged_at"] = ctx.now
    await ctx.conn.execute(
        scoped(ctx, lead_imports).update().where(lead_imports.c.id == imp.id).values(**values)
    )
    await close_if_merged(ctx, imp.id)
    return len(rows)


async def _merge_side_part(ctx: WorkspaceContext) -> int:
    """SQLite: the oldest part in the side file above its import's marker merged, and recorded as merged in
    the same transaction: the import's counters grow by what it received (`rows`, the client's own
    `invalid` and `duplicates`) and by the merge's outcomes, `merged_seq` becomes the part's, and the final
    part sets `final_at`. `queued` in the database stays 0: the side file's parts above the marker are the
    queued rows. The part's rows are deleted from the side file after the commit
    (`release_merged_parts`)."""
    queue = side_queue_of(ctx.conn)
    async with queue.reading() as side:
        parts = await pending_parts(side, workspace_id=ctx.workspace_id)
        # This transaction holds the database's write lock: an import a part names and the database has not
        # is not being created (its creator writes the side file before its own commit, holding that lock),
        # so it is gone: deleted with its workspace, or its creating transaction failed after the side file.
        markers = await _markers(ctx, {p.import_id for p in parts})
        waiting = above_marker(parts, markers)
        if waiting:
            oldest = waiting[0].import_id
            header = min((p for p in waiting if p.import_id == oldest), key=lambda p: p.seq)
            rows = await part_rows(side, header)
    await drop_imports(queue, {p.import_id for p in parts} - markers.keys())
    if not waiting:
        return 0
    imp = (
        await ctx.conn.execute(
            scoped(ctx, lead_imports).select().where(lead_imports.c.id == header.import_id)
        )
    ).one()
    counts = await _merge(ctx, imp, [stored_row(row) for row in rows])
    await _refresh_statistics(ctx, imp, counts, None)
    values: dict[str, Any] = {name: getattr(lead_imports.c, name) + counts[name] for name in OUTCOMES}
    values["rows"] = lead_imports.c.rows + header.rows + header.client_invalid + header.client_duplicates
    values["invalid"] = lead_imports.c.invalid + counts["invalid"] + header.client_invalid
    values["duplicates"] = lead_imports.c.duplicates + counts["duplicates"] + header.client_duplicates
    values["merged_seq"] = header.seq
    values["merged_at"] = ctx.now
    if header.final:
        values["final_at"] = header.created_at
    await ctx.conn.execute(
        scoped(ctx, lead_imports).update().where(lead_imports.c.id == imp.id).values(**values)
    )
    await close_if_merged(ctx, imp.id)
    return max(header.rows, 1)


async def _refresh_statistics(
    ctx: WorkspaceContext, imp: Any, counts: dict[str, int], analyse_after: set[str] | None
) -> None:
    if _doubled(imp.created, imp.created + counts["created"]):
        # Without fresh statistics (autovacuum off or behind) PostgreSQL took the workspace for a few rows
        # and looked up a part's 5,000 addresses by filtering every lead: 138 ms at 350,000 leads and
        # growing, instead of 20 ms through the address index (measured).
        if analyse_after is None:
            await refresh_lead_statistics(ctx.conn)
        else:
            analyse_after.add("leads")
    if analyse_after is None:
        # The other tables an import grows, analysed as they grow by half (PostgreSQL; see the function).
        await refresh_grown_statistics(ctx.conn, GROWN_TABLES)


async def _claim(ctx: WorkspaceContext) -> str | None:
    """The workspace's import with the longest-waiting queued rows that no other worker is merging.

    PostgreSQL: a transaction-level advisory lock per import, taken with `pg_try_advisory_xact_lock`, so
    parts of one import are merged one at a time and in order, while the import's row stays free for the
    requests queueing more chunks (a row lock would make each of them wait for a whole merge). The part is
    read after the lock is taken, so a part another worker merged just before is not seen again. SQLite
    runs one writer at a time anyway."""
    queue = scoped(ctx, import_queue)
    waiting = (
        (
            await ctx.conn.execute(
                queue.select(import_queue.c.import_id)
                .group_by(import_queue.c.import_id)
                .order_by(func.min(import_queue.c.created_at))
                .limit(_CLAIM_CANDIDATES)
            )
        )
        .scalars()
        .all()
    )
    for import_id in waiting:
        if await try_lock(ctx, f"import:{import_id}"):
            return str(import_id)
    return None


async def refresh_import_statistics(ctx: SystemContext, tables: set[str]) -> None:
    """PostgreSQL, after merges committed: ANALYZE `leads` if `tables` names it (an import doubled the leads
    it created, `merge_queued_rows`), and the other tables imports grow that grew by half. Own transaction:
    the import worker runs it beside the next part's merge (an ANALYZE takes no lock a merge waits for)."""
    if "leads" in tables:
        await refresh_lead_statistics(ctx.conn)
    await refresh_grown_statistics(ctx.conn, GROWN_TABLES)


def _doubled(before: int, after: int) -> bool:
    step = STATISTICS_FROM
    while step <= after:
        if before < step:
            return True
        step *= 2
    return False


def _stale_imports(ctx: SystemContext) -> Any:
    """Imports still `importing` with nothing queued whose last chunk came `import_abandon_s` ago or more."""
    before = ctx.now - timedelta(seconds=ctx.settings.import_abandon_s)
    chunks = system_scope(import_chunks)
    last_chunk = (
        chunks.select(func.max(import_chunks.c.created_at))
        .where(import_chunks.c.import_id == lead_imports.c.id)
        .scalar_subquery()
    )
    return (
        system_scope(lead_imports)
        .select(lead_imports.c.id)
        .where(
            lead_imports.c.status == "importing",
            lead_imports.c.final_at.is_(None),
            lead_imports.c.queued == 0,
            func.coalesce(last_chunk, lead_imports.c.created_at) <= before,
        )
    )


async def stale_imports(ctx: SystemContext) -> list[str]:
    """Read-only: the imports `fail_stale_imports` would end (the worker writes only when there are some)."""
    found = [str(i) for i in (await ctx.conn.execute(_stale_imports(ctx).limit(100))).scalars()]
    return await _without_recent_parts(ctx, found)


async def _without_recent_parts(ctx: SystemContext, import_ids: list[str]) -> list[str]:
    """SQLite: the imports among `import_ids` (stale by the database) with no part waiting in the side file
    and no chunk received there within `import_abandon_s`. The side file is read after the database here:
    a chunk that came in between is seen (a part merged in between keeps its header, and its time)."""
    if not import_ids or ctx.conn.dialect.name != "sqlite":
        return import_ids
    before = ctx.now - timedelta(seconds=ctx.settings.import_abandon_s)
    async with side_queue_of(ctx.conn).reading() as side:
        waiting = {p.import_id for p in await pending_parts(side, import_ids=import_ids)}
        last = await last_chunks(side, import_ids)
    return [i for i in import_ids if i not in waiting and (i not in last or last[i] <= before)]


async def fail_stale_imports(ctx: SystemContext, import_ids: list[str]) -> int:
    """End the given imports `failed` if they are still stale: their final chunk never came. What their
    chunks brought stays stored (created, on the list, counted); a chunk sent later is refused (409).
    Returns how many ended. (SQLite: a chunk queued in the side file between its read here and this
    transaction's commit is accepted, then merged and counted, into the failed import.)"""
    import_ids = await _without_recent_parts(ctx, import_ids)
    if not import_ids:
        return 0
    hours = ctx.settings.import_abandon_s / 3600
    span = (
        f"{hours:g} hour{'s' if hours != 1 else ''}" if hours >= 1 else f"{ctx.settings.import_abandon_s:g} s"
    )
    stale = _stale_imports(ctx).where(lead_imports.c.id.in_(import_ids)).scalar_subquery()
    ended = await ctx.conn.execute(
        system_scope(lead_imports)
        .update()
        .where(lead_imports.c.id.in_(stale))
        .values(
            status="failed",
            finished_at=ctx.now,
            failure_reason=f"The final chunk (final: true) did not come within {span} of the last chunk; "
            "the rows received before are stored.",
        )
    )
    await ctx.conn.execute(system_scope(import_seen).delete().where(import_seen.c.import_id.in_(import_ids)))
    return int(ended.rowcount or 0)


async def close_if_merged(ctx: WorkspaceContext, import_id: str) -> None:
    """Once the final chunk has arrived and every queued row is merged, the import moves on to `enriching`
    (the enrich worker takes it from there) and its list of met addresses is dropped."""
    closed = await ctx.conn.execute(
        scoped(ctx, lead_imports)
        .update()
        .where(
            lead_imports.c.id == import_id,
            lead_imports.c.status == "importing",
            lead_imports.c.final_at.is_not(None),
            lead_imports.c.queued == 0,
        )
        .values(status="enriching")
    )
    if closed.rowcount:
        await ctx.conn.execute(scoped(ctx, import_seen).delete().where(import_seen.c.import_id == import_id))


# --- the work of one part ----------------------------------------------------------------------------------


async def _merge(ctx: WorkspaceContext, imp: Any, rows: list[Row]) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    unique: dict[str, tuple[str, Row]] = {}
    for row in rows:
        normalized = normalize_email(row.get("email"))
        if normalized is None:
            counts["invalid"] += 1
        elif normalized[0] in unique:
            counts["duplicates"] += 1
        else:
            unique[normalized[0]] = (normalized[1], row)
    if not unique:
        return counts
    if ctx.conn.dialect.name == "postgresql":
        await merge_staged(ctx, imp, unique, counts)
        return counts

    lead_table = scoped(ctx, leads)
    known = {
        r.email: r
        for r in (
            await ctx.conn.execute(
                lead_table.select(leads.c.id, leads.c.email, leads.c.import_id)
                .where(one_of(ctx, leads.c.email, list(unique)))
                # PostgreSQL: a lead met here cannot be deleted before this merge commits (it is counted,
                # updated and put on the list below); SQLite runs one writer at a time anyway
                .with_for_update(read=True)
            )
        ).all()
    }
    created_here = {e for e, r in known.items() if r.import_id == imp.id}
    others = [e for e in unique if e not in created_here]
    met = (
        set(
            (
                await ctx.conn.execute(
                    scoped(ctx, import_seen)
                    .select(import_seen.c.email)
                    .where(import_seen.c.import_id == imp.id, one_of(ctx, import_seen.c.email, others))
                )
            ).scalars()
        )
        if others
        else set()
    )
    counts["duplicates"] += len(created_here) + len(met)
    fresh = [e for e in others if e not in met]

    suppressed = await suppressed_emails(ctx, [(e, unique[e][0]) for e in fresh])
    counts["suppressed"] = len(suppressed)
    existing = {e: known[e].id for e in fresh if e in known and e not in suppressed}
    new = [e for e in fresh if e not in known and e not in suppressed]
    over: list[str] = []
    room = await contacts_room(ctx) if new else None
    if room is not None and room.current + len(new) > room.limit:
        fits = max(room.limit - room.current, 0)
        new, over = new[:fits], new[fits:]
        counts["over_limit"] = len(over)
    not_created = [*suppressed, *existing, *over]
    if not_created:
        await insert_rows(ctx, import_seen, [{"import_id": imp.id, "email": e} for e in not_created])

    if existing:
        if imp.existing == "update":
            counts["updated"] = await _update_existing(ctx, existing, unique)
        else:
            counts["skipped"] = len(existing)
    created: list[dict[str, Any]] = []
    if new:
        ids = new_ids("lead", len(new))
        created = new_lead_rows(ctx, imp, ((i, e, *unique[e]) for i, e in zip(ids, new, strict=True)))
        # leads at a provider known without DNS are stored enriched: written once, not inserted then updated
        await enrich_new_leads(ctx, created)
        await insert_rows(ctx, leads, created)
        # SQLite: counted here, one upsert per counter key (the insert trigger skips an import's leads)
        await count_imported_leads(ctx, created)
        counts["created"] = len(new)
    if imp.list_id is not None:
        await add_known_leads_to_list(
            ctx, imp.list_id, [r["id"] for r in created], [r["created_at"] for r in created], created_now=True
        )
        # known leads: their creation times are read by the statement (see `add_known_leads_to_list`)
        await add_known_leads_to_list(ctx, imp.list_id, list(existing.values()))
    return counts


async def _update_existing(
    ctx: WorkspaceContext, existing: dict[str, str], unique: dict[str, tuple[str, Row]]
) -> int:
    """`existing: update` on SQLite: what the file changes (`lead_changes`; a lead it would leave as it is
    is not written), one statement per set of changed columns (`bulk.update_each`, an executemany) setting
    only those, so that SQLite rewrites only the indexes on them. Returns how many leads were met
    (`updated` counts them all)."""
    lead_table = scoped(ctx, leads)
    current = {
        values["id"]: values
        for _, values in row_dicts(
            await ctx.conn.execute(
                # only what `lead_changes` compares (every column would cost its type's conversion per row)
                lead_table.select(leads.c.id, *compared_columns()).where(
                    one_of(ctx, leads.c.id, list(existing.values()))
                )
            )
        )
    }
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for email, lead_id in existing.items():
        now = current[lead_id]
        if changes := lead_changes(email, unique[email][1], now, bool(now["indexed"])):
            groups.setdefault(tuple(sorted(changes)), []).append(
                {"id": lead_id, **changes, "updated_at": ctx.now}
            )
    for rows in groups.values():
        await update_each(ctx, lead_table.update(), rows)
    return len(existing)
