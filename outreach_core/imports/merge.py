"""The import worker's half of a lead import: queued rows merged into the workspace's leads.

`import_leads` only validates a chunk and queues its rows (`import_queue`, one part per chunk), so a chunk is
accepted at the speed of one append. This module merges one part per transaction (on SQLite, with
`OUTREACH_IMPORT_SLICE_ROWS` set, a slice of a part while chunks still come: `part_slice`), in the order
the parts arrived: addresses are normalised, deduplicated within the import and against the workspace,
checked against the suppression list, then created, updated or skipped, and put on the import's list. Each
merge adds its outcomes to the import's counters and takes its rows off `queued`, in the same transaction.

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
from outreach_core.imports.lead_rows import Row, compared_columns, lead_changes, new_lead_rows
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
STATISTICS_FROM = 5_000
"""The planner statistics of `leads` are refreshed whenever an import has doubled the leads it created,
from this many on (5,000, 10,000, 20,000 ...; nine times for a million)."""
GROWN_TABLES = ("list_leads", "import_seen", "import_queue")
"""The other tables a merge grows, whose statistics it keeps (`refresh_grown_statistics`)."""


def import_principal(workspace_id: str) -> Principal:
    """What the import worker acts as: the workspace itself."""
    return workspace_itself(workspace_id, "import")


async def queued_import_workspaces(ctx: SystemContext, limit: int) -> list[str]:
    """Up to `limit` workspaces with import rows waiting to be merged, the longest waiting first."""
    q = system_scope(import_queue)
    rows = await ctx.conn.execute(
        q.select(import_queue.c.workspace_id)
        .group_by(import_queue.c.workspace_id)
        .order_by(func.min(import_queue.c.created_at))
        .limit(limit)
    )
    return [str(ws) for ws in rows.scalars().all()]


async def merge_queued_rows(ctx: WorkspaceContext, analyse_after: set[str] | None = None) -> int:
    """Merge the workspace's oldest queued part of an import into its leads; returns the rows merged (0 when
    nothing is queued, or other workers are merging every import that has some).

    `analyse_after` (the import worker, PostgreSQL): the planner statistics this merge makes due are not
    refreshed in its transaction but named there (`leads`), for the caller to refresh after the commit on
    another connection, beside the next part's merge (`refresh_import_statistics`). Without it (SQLite, and
    callers that merge once) they are refreshed here, in the transaction."""
    import_id = await _claim(ctx)
    if import_id is None:
        return 0
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
    start, end = part_slice(ctx, imp, part.merged_rows, len(part.rows))
    rows = [stored_row(row) for row in part.rows[start:end]]
    counts = await _merge(ctx, imp, rows)
    this_part = (import_queue.c.import_id == imp.id, import_queue.c.seq == part.seq)
    if end < len(part.rows):
        await ctx.conn.execute(queue.update().where(*this_part).values(merged_rows=end))
    else:
        await ctx.conn.execute(queue.delete().where(*this_part))
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
    # The import's row is written last: from here to the commit, a chunk of this import waits for it.
    values: dict[str, Any] = {name: getattr(lead_imports.c, name) + counts[name] for name in OUTCOMES}
    values["queued"] = lead_imports.c.queued - len(rows)
    values["merged_at"] = ctx.now
    await ctx.conn.execute(
        scoped(ctx, lead_imports).update().where(lead_imports.c.id == imp.id).values(**values)
    )
    await close_if_merged(ctx, imp.id)
    return len(rows)


def part_slice(ctx: WorkspaceContext, imp: Any, merged: int, size: int) -> tuple[int, int]:
    """Which rows of a part (of `size` rows, `merged` of them merged already) this transaction merges.

    SQLite has one writer at a time, so a chunk request waits for the merge transaction in progress: with a
    whole 5,000-row part per transaction (half a second) chunks were accepted at the merge's pace. While
    the import still receives chunks (its final one has not come), a transaction there merges
    `import_slice_rows` rows and records how far it got (`import_queue.merged_rows`) in the same
    transaction, so a kill loses or repeats nothing and a chunk waits for one slice at most. A slice costs
    more per row than a part (each transaction's own statements, and the page cache the other process's
    writes empty), so once the final chunk is in, the rest is merged in whole parts. PostgreSQL's requests
    do not wait for the merge: it always takes whole parts (one statement per part)."""
    slice_rows = ctx.settings.import_slice_rows
    if ctx.conn.dialect.name == "postgresql" or slice_rows == 0 or imp.final_at is not None:
        return merged, size
    return merged, min(size, merged + slice_rows)


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
    return [str(i) for i in (await ctx.conn.execute(_stale_imports(ctx).limit(100))).scalars()]


async def fail_stale_imports(ctx: SystemContext, import_ids: list[str]) -> int:
    """End the given imports `failed` if they are still stale: their final chunk never came. What their
    chunks brought stays stored (created, on the list, counted); a chunk sent later is refused (409).
    Returns how many ended."""
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
        r.id: r
        for r in (
            await ctx.conn.execute(
                # only what `lead_changes` compares (every column would cost its type's conversion per row)
                lead_table.select(leads.c.id, *compared_columns()).where(
                    one_of(ctx, leads.c.id, list(existing.values()))
                )
            )
        ).all()
    }
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for email, lead_id in existing.items():
        now = current[lead_id]
        if changes := lead_changes(email, unique[email][1], now, bool(now.indexed)):
            groups.setdefault(tuple(sorted(changes)), []).append(
                {"id": lead_id, **changes, "updated_at": ctx.now}
            )
    for rows in groups.values():
        await update_each(ctx, lead_table.update(), rows)
    return len(existing)
