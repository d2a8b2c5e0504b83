"""PostgreSQL's merge of an import part, set-based through temporary staging tables (issue 31; the
SQLite merge and the import worker's claim are in `merge.py`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ARRAY,
    Boolean,
    Column,
    MetaData,
    Table,
    Text,
    any_,
    bindparam,
    insert,
    literal,
    select,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.schema import CreateTable

from outreach_core.enrichment.pipeline import enrich_new_leads
from outreach_core.imports.lead_rows import (
    Row,
    compared_columns,
    lead_changes,
    new_lead_rows,
    row_dicts,
    update_lead_values,
)
from outreach_core.kernel.bulk import copy_records, insert_rows, one_of
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import import_seen, lead_search_pending, leads, list_leads
from outreach_core.kernel.db.types import json_text
from outreach_core.kernel.ids import new_ids
from outreach_core.leads.contacts import contacts_room
from outreach_core.leads.schemas import LEAD_FIELDS
from outreach_core.targets.list_members import add_known_leads_to_list, lock_list
from outreach_core.targets.suppression import suppressed_emails

# --- the part staged, then merged set-based ----------------------------------------------------

_STAGE_META = MetaData()
_lead_stage = Table(
    # a part's new leads as they would be stored; ON COMMIT DELETE ROWS: empty at every transaction's end,
    # created once per database connection (`_stage`), so a part costs no catalog writes
    "import_lead_stage",
    _STAGE_META,
    *(Column(c.name, c.type) for c in leads.c),
    prefixes=["TEMPORARY"],
    postgresql_on_commit="DELETE ROWS",
)
_update_stage = Table(
    # `existing: update`: per lead the part changes, the changed values (NULL: the column stays as it is)
    "import_update_stage",
    _STAGE_META,
    Column("id", leads.c.id.type),
    Column("workspace_id", leads.c.workspace_id.type),
    *(Column(name, leads.c[name].type) for name in LEAD_FIELDS),
    Column("custom", Text()),  # JSON text
    Column("sort_name", leads.c.sort_name.type),
    Column("search_text", leads.c.search_text.type),
    Column("search_index", leads.c.search_index.type),
    Column("reset_enrichment", Boolean()),
    prefixes=["TEMPORARY"],
    postgresql_on_commit="DELETE ROWS",
)
_CHANGED = tuple(c.name for c in _update_stage.c if c.name not in ("id", "workspace_id", "reset_enrichment"))
"""The staged columns a lead's changes fill (NULL where the column does not change)."""
_UPDATE_COLUMNS = ("id", *_CHANGED, "reset_enrichment")
"""A staged change's record (`copy_records`; `workspace_id` appended there)."""


async def _stage(ctx: WorkspaceContext, stage: Table, rows: list[dict[str, Any]]) -> None:
    """COPY `rows` into the connection's temporary table `stage` (created on the connection's first use)."""
    await ctx.conn.execute(CreateTable(stage, if_not_exists=True))
    await insert_rows(ctx, stage, rows)


async def merge_staged(
    ctx: WorkspaceContext, imp: Any, unique: dict[str, tuple[str, Row]], counts: dict[str, int]
) -> None:
    """PostgreSQL's merge of a part's distinct addresses (issue 31): the new leads are COPYed into a
    temporary staging table, then stored by one `INSERT INTO leads ... SELECT ... FROM staging ON CONFLICT
    (workspace_id, email) DO NOTHING RETURNING`, which also puts them on the list and in the search queue
    (one statement, writable CTEs). The unique index decides which addresses are new, probed once per row
    whatever the planner's statistics say; only the addresses it turns away (already leads) are looked up
    afterwards. Counters as in the SQLite path: created, duplicates (met earlier in this import),
    suppressed, skipped or updated, over the contacts limit."""
    emails = list(unique)
    met = set(
        (
            await ctx.conn.execute(
                scoped(ctx, import_seen)
                .select(import_seen.c.email)
                .where(import_seen.c.import_id == imp.id, one_of(ctx, import_seen.c.email, emails))
            )
        ).scalars()
    )
    fresh = [e for e in emails if e not in met]
    suppressed = await suppressed_emails(ctx, [(e, unique[e][0]) for e in fresh]) if fresh else set()
    candidates = [e for e in fresh if e not in suppressed]
    update = imp.existing == "update"
    known: dict[str, Any] = {}
    over: list[str] = []
    room = await contacts_room(ctx) if candidates else None
    tight = room is not None and room.current + len(candidates) > room.limit
    # An import that has met more known addresses than it created so far (a file imported again, `existing:
    # update`) looks them up first, so that it does not build and stage a row for every known lead only to
    # have the insert turn it away.
    if tight or imp.skipped + imp.updated > imp.created:
        # Near the limit the new addresses must be known before storing, to store the first that fit.
        known = await _known_leads(ctx, candidates, update)
        candidates = [e for e in candidates if e not in known]
        if room is not None and tight:
            fits = max(room.limit - room.current, 0)
            candidates, over = candidates[:fits], candidates[fits:]
    columns = await _stage_new_leads(ctx, imp, unique, candidates)
    # the import's list, held until the commit (no foreign key checks it per membership; a list deleted
    # while the import runs gets no members)
    list_id = imp.list_id if imp.list_id is not None and await lock_list(ctx, imp.list_id) else None
    created = await _store_staged(ctx, list_id, columns)
    # Every address not stored now is a lead already (the import's own, or another's), or a lead deleted
    # since it turned the insert away: those are stored by a second try, until none is left.
    lookup = [e for e in suppressed if e not in known]
    while missing := [e for e in candidates if e not in created and e not in known]:
        known |= await _known_leads(ctx, [*missing, *lookup], update)
        lookup = []
        if gone := [e for e in missing if e not in known]:
            created |= await _store_staged(ctx, list_id, columns, gone)
    if lookup:
        known |= await _known_leads(ctx, lookup, update)
    created_here = {e for e, r in known.items() if r.import_id == imp.id and e not in created}
    counts["duplicates"] += len(met) + len(created_here)
    counts["created"] = len(created)
    suppressed_now = [e for e in fresh if e in suppressed and e not in created_here]
    counts["suppressed"] = len(suppressed_now)
    existing = {
        e: known[e]
        for e in fresh
        if e in known and e not in created_here and e not in suppressed and e not in created
    }
    counts["over_limit"] = len(over)
    not_created = [*suppressed_now, *existing, *over]
    if not_created:
        await insert_rows(ctx, import_seen, [{"import_id": imp.id, "email": e} for e in not_created])
    if existing:
        if update:
            counts["updated"] = await _update_staged(ctx, existing, unique)
        else:
            counts["skipped"] = len(existing)
        if list_id is not None:
            known_leads = list(existing.values())
            await add_known_leads_to_list(
                ctx, list_id, [r.id for r in known_leads], [r.created_at for r in known_leads]
            )


async def _known_leads(ctx: WorkspaceContext, emails: list[str], update: bool) -> dict[str, Any]:
    """The workspace's leads with these addresses (id, email, import_id; `update`: also the values an
    update merges with), by address, share-locked: a lead met here cannot be deleted before this merge
    commits (it is counted, updated and put on the list)."""
    if not emails:
        return {}
    columns: list[Any] = [leads.c.id, leads.c.email, leads.c.import_id, leads.c.created_at]
    if update:
        columns += compared_columns()
    rows = await ctx.conn.execute(
        scoped(ctx, leads)
        .select(*columns)
        .where(one_of(ctx, leads.c.email, emails))
        .with_for_update(read=True)
    )
    return {r.email: r for r in rows}


async def _stage_new_leads(
    ctx: WorkspaceContext, imp: Any, unique: dict[str, tuple[str, Row]], emails: list[str]
) -> list[str]:
    """COPY the rows of new leads for `emails` (ids made here) into the staging table; returns the columns
    they fill."""
    if not emails:
        return []
    ids = new_ids("lead", len(emails))
    rows = new_lead_rows(ctx, imp, ((i, e, *unique[e]) for i, e in zip(ids, emails, strict=True)))
    # leads at a provider known without DNS are stored enriched: written once, not inserted then updated
    await enrich_new_leads(ctx, rows)
    await _stage(ctx, _lead_stage, rows)
    return [*rows[0], "workspace_id"]


async def _store_staged(
    ctx: WorkspaceContext, list_id: str | None, columns: list[str], only: list[str] | None = None
) -> dict[str, str]:
    """Store the staged leads (`only`: of those addresses) that are not leads yet, put them on the list
    `list_id` (held by the caller, `lock_list`) and in the search queue; returns their ids by address."""
    if not columns:
        return {}
    stage = _lead_stage
    source = select(*(stage.c[name] for name in columns)).where(stage.c.workspace_id == ctx.workspace_id)
    if only is not None:
        source = source.where(stage.c.email == any_(_text_array(only)))
    stored = (
        pg_insert(leads)
        .from_select(columns, source)
        .on_conflict_do_nothing(index_elements=["workspace_id", "email"])
        .returning(leads.c.id, leads.c.email, leads.c.created_at)
        .cte("stored")
    )
    owner = literal(ctx.workspace_id, leads.c.workspace_id.type)
    searched = insert(lead_search_pending).from_select(
        ["lead_id", "workspace_id"], select(stored.c.id, owner)
    )
    statement = select(stored.c.id, stored.c.email).add_cte(searched.cte("searched"))
    if list_id is not None:
        listed = insert(list_leads).from_select(
            ["list_id", "lead_id", "added_at", "lead_created_at", "workspace_id"],
            select(
                literal(list_id, list_leads.c.list_id.type),
                stored.c.id,
                literal(ctx.now, list_leads.c.added_at.type),
                stored.c.created_at,
                owner,
            ),
        )
        statement = statement.add_cte(listed.cte("listed"))
    return {r.email: r.id for r in await ctx.conn.execute(statement)}


def _text_array(values: list[str]) -> Any:
    return bindparam(None, values, type_=ARRAY(Text()))


async def _update_staged(
    ctx: WorkspaceContext, existing: dict[str, Any], unique: dict[str, tuple[str, Row]]
) -> int:
    """`existing: update` on PostgreSQL: the changes of the leads the part changes (`lead_changes`; a lead
    it would leave as it is gets no new row version) are staged (COPY), then one `UPDATE leads ... FROM
    staging`; each column is `COALESCE(change, current)`. Returns how many leads were met (`updated`
    counts them all)."""
    records: list[tuple[Any, ...]] = []
    # every row of `existing` is from `_known_leads(..., update=True)`: the same columns
    for (email, now), (_, current) in zip(existing.items(), row_dicts(existing.values()), strict=True):
        changes = lead_changes(email, unique[email][1], current, current["indexed"])
        if changes:
            if "custom" in changes:
                changes["custom"] = json_text(changes["custom"])
            # `enriched_at` and `country_source` the statement clears itself (`update_lead_values`)
            records.append((now.id, *map(changes.get, _CHANGED), "enriched_at" in changes))
    if records:
        await ctx.conn.execute(CreateTable(_update_stage, if_not_exists=True))
        await copy_records(ctx, _update_stage, _UPDATE_COLUMNS, records)
        s = _update_stage.c
        await ctx.conn.execute(
            scoped(ctx, leads)
            .update()
            .where(leads.c.id == s.id, s.workspace_id == ctx.workspace_id)
            .values(update_lead_values(ctx, lambda name: s[name]))
        )
    return len(existing)
