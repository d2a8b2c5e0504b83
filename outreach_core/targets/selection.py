"""Selecting leads: the filters of `list_leads` and the lead target object, as set-based SQL.

Everything here returns SQL conditions or sub-selects of lead ids, never id lists in Python, so an action
on "all leads" or "this filter" runs as one statement whatever the number of leads.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Select,
    Text,
    and_,
    cast,
    exists,
    func,
    literal,
    literal_column,
    not_,
    or_,
    true,
    union_all,
)
from sqlalchemy.dialects import postgresql

from outreach_core.kernel.bulk import OuterLoopJoin, count_sample, holds
from outreach_core.kernel.context import WorkspaceContext, scoped, unscoped
from outreach_core.kernel.db.tables import (
    lead_labels,
    lead_search,
    lead_search_pending,
    leads,
    leads_fts,
    leads_fts_vocab,
    list_leads,
)
from outreach_core.targets.schemas import LeadFilter, LeadTarget

MIN_TRIGRAM = 3
END = "\x1f"
"""Follows each text in SQLite's trigram index, and cuts pairs apart in PostgreSQL's index of short terms
(migration 0008); a term holding it is matched by testing rows."""
NO_LABEL = "none"
SEARCH_TOTAL_LIMIT = 10_000
"""A search's matches are counted up to this many (each counted match is read: an exact count of a term
that 189,314 of a million leads contain took 0.3-0.6 s); past it a listing reports `totalExact: false`."""
SHORT_TERM_SAMPLE = 1_000
"""A 1-2 character search term that at least a tenth of the workspace's first this many leads contain is
matched by testing rows (at that density the count's limit comes within about 100,000 rows and a page within
a few hundred); a rarer one through its index, whose cost grows with the term's matches (on SQLite, listing
the trigrams that start with "a", a letter 98 % of a million leads hold, takes 0.28 s)."""


def search_needle(term: str) -> str:
    """What a `search` term matches: stripped and lower-cased, like `search_text`."""
    return term.strip().lower()


def search_pattern(needle: str) -> str:
    """The `LIKE` pattern matching `needle` anywhere (its own `%`, `_` and `\\` escaped)."""
    return "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def search_condition(ctx: WorkspaceContext, term: str, *, frequent: bool = False) -> ColumnElement[bool]:
    """Substring match over email, name and company (case-insensitive).

    Leads the search-index worker has indexed are found through an index. Terms of 3 or more characters
    use the trigram index: SQLite's FTS5 table `leads_fts` over `search_index`, PostgreSQL's pg_trgm GIN
    index on the side table `lead_search` (migration 0021). Terms of 1-2 characters use, on SQLite, the
    trigrams of `leads_fts` that start with the term (its texts end with two `END` characters, so each place
    the term occurs starts one); on PostgreSQL, the GIN index `ix_lead_search_short` over each text's
    characters and pairs of characters (`lead_search_grams`, migration 0008). Other short terms are matched
    by testing rows. Leads not indexed yet (just imported) are matched with `LIKE` on `search_text`, found
    through the partial index `ix_leads_search_pending` (SQLite; PostgreSQL: `lead_search_pending`), so
    results are complete at once (see `_postgresql_matches`).

    `frequent` (the caller knows many leads match, e.g. a common 1-2 character term): test each row with
    `LIKE` on `search_text` instead, so that a count stops at its limit after a few thousand rows rather than
    first collecting every match from the index. Same matches: `search_index` is a copy of `search_text`
    once set. (A page of such a search is read by `search_walk`.)
    """
    needle = search_needle(term)
    if not needle:
        return true()
    pattern = search_pattern(needle)
    if not _indexed(ctx, needle, frequent):
        return leads.c.search_text.like(pattern, escape="\\")
    pending = _pending(pattern)
    if ctx.conn.dialect.name != "sqlite":
        return leads.c.id.in_(_postgresql_matches(ctx, needle, pattern))
    fts = unscoped(leads_fts)  # type: ignore[arg-type]
    matched = fts.select(leads_fts.c.rowid).where(_fts_match(needle))
    unindexed = scoped(ctx, leads).select(literal_column("leads.rowid")).where(pending).correlate(None)
    found: ColumnElement[bool] = literal_column("leads.rowid").in_(matched.union_all(unindexed))
    return found


def _postgresql_matches(ctx: WorkspaceContext, needle: str, pattern: str) -> CompoundSelect[Any]:
    """PostgreSQL: the ids of the workspace's leads holding `needle`, from three places (`UNION ALL`, so
    that each is read through its own index): `lead_search`, whose GIN indexes answer (pg_trgm for 3 or
    more characters; for 1-2, the grams index, `@>` being exact, with the text rechecked cheaply: a LIKE of
    1-2 characters through pg_trgm would read the whole trigram index, 3.4 s at a million leads); the
    leads an import stored that the search-index worker has not moved there yet (`lead_search_pending`,
    their `search_text` tested); and leads with no `search_index` (a text too long; `_pending`)."""
    text_like = lead_search.c.text.like(pattern, escape="\\")
    indexed = scoped(ctx, lead_search).select(lead_search.c.lead_id)
    if len(needle) >= MIN_TRIGRAM:
        indexed = indexed.where(text_like)
    else:
        grams = func.lead_search_grams(lead_search.c.text).collate("C")
        indexed = indexed.where(
            grams.op("@>")(cast(postgresql.array([needle]), postgresql.ARRAY(Text))), text_like
        )
    waiting = (
        scoped(ctx, lead_search_pending)
        .select(lead_search_pending.c.lead_id)
        .join(leads, leads.c.id == lead_search_pending.c.lead_id)
        .where(leads.c.search_text.like(pattern, escape="\\"))
    )
    unindexed = scoped(ctx, leads).select(leads.c.id).where(_pending(pattern))
    return union_all(indexed, waiting, unindexed)


def matching_ids(
    ctx: WorkspaceContext, f: LeadFilter, *, frequent_search: bool = False
) -> Select[Any] | CompoundSelect[Any]:
    """A SELECT of the ids of the workspace's leads that `f` selects, shaped for counting them: the same
    leads as `filter_conditions`. On SQLite, a search through the FTS5 index reads its matches as a stream
    joined to the leads, which a LIMIT stops early; `search_condition`'s `rowid IN (...)` first collects the
    matches of every workspace (counting 10,001 of the 189,314 leads holding "hooli": 80-88 ms that way,
    11 ms this way)."""
    lead_table = scoped(ctx, leads)
    needle = search_needle(f.search or "")
    if ctx.conn.dialect.name != "sqlite" or not needle or not _indexed(ctx, needle, frequent_search):
        return lead_table.select(leads.c.id).where(
            *filter_conditions(ctx, f, frequent_search=frequent_search)
        )
    others = filter_conditions(ctx, f.model_copy(update={"search": None}))
    # FTS5 first, whatever the planner estimates: read the other way, a lead at a time, it would look every
    # lead of the workspace up in the index
    from_matches = OuterLoopJoin(leads_fts, leads, literal_column("leads.rowid") == leads_fts.c.rowid)
    streamed = lead_table.select(leads.c.id).select_from(from_matches).where(_fts_match(needle))
    unindexed = lead_table.select(leads.c.id).where(_pending(search_pattern(needle)))
    return streamed.where(*others).union_all(unindexed.where(*others))


def search_walk(
    ctx: WorkspaceContext,
    f: LeadFilter,
    sorted_by: tuple[ColumnElement[Any], ...],
    direction: str,
    *,
    page_size: int,
    offset: int,
) -> Select[Any]:
    """A SELECT of the key (the last of `sorted_by`: the id, or the address for sort=email) of each lead on
    one page of the leads `f` selects, in the order of `sorted_by` and `direction`: the search of a term
    many leads hold.

    It walks the sort index and tests each lead's text as it goes, so a page stops at its last match rather
    than first collecting every match. The sort indexes carry `search_index` (migration 0009), so the walk
    reads no table rows for the indexed leads (without other filters): a page of "hooli" sorted by company
    descending, whose first match is the 69,624th lead of that order, took 270-315 ms reading each lead's
    row and 31-35 ms this way (a million leads). Leads outside the index (just imported, or a text over
    `SEARCH_INDEX_MAX_BYTES`) are walked apart, through `ix_leads_search_pending`, and merged in order."""
    lead_table = scoped(ctx, leads)
    needle = search_needle(f.search or "")
    others = filter_conditions(ctx, f.model_copy(update={"search": None}))
    walks = [
        lead_table.select(*sorted_by)
        .where(half, *others)
        .order_by(*ordered(sorted_by, direction))
        .limit(offset + page_size)
        .subquery()
        .select()
        for half in _held_where(needle)
    ]
    merged = union_all(*walks).subquery()
    in_order = ordered(tuple(merged.c[c.name] for c in sorted_by), direction)
    page = merged.select().with_only_columns(merged.c[sorted_by[-1].name]).order_by(*in_order)
    return page.limit(page_size).offset(offset)


def holds_term(needle: str) -> ColumnElement[bool]:
    """Whether the lead row at hand holds `needle` (a `search_needle`), tested on the row itself: the test
    of a walk that reads each lead anyway, in an order no search index gives (a campaign's leads)."""
    return or_(*_held_where(needle))


def _held_where(needle: str) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    """`needle` tested on a lead's row, for the indexed leads and for the others: `holds`, not LIKE, on
    `search_index`, or PostgreSQL would weigh reading the trigram index for every match instead."""
    return holds(leads.c.search_index, needle), _pending(search_pattern(needle))


def ordered(columns: tuple[ColumnElement[Any], ...], direction: str) -> list[ColumnElement[Any]]:
    """`ORDER BY` terms for `columns`, each ascending or each descending."""
    return [c.asc() if direction == "asc" else c.desc() for c in columns]


def _indexed(ctx: WorkspaceContext, needle: str, frequent: bool) -> bool:
    """Whether a search for `needle` goes through an index rather than testing rows: not when the caller
    knows it is frequent or it holds `END`; a 1-2 character term always on PostgreSQL, and on SQLite when it
    is ASCII, as FTS5 folds the case of the trigrams it lists itself."""
    if frequent or END in needle:
        return False
    return len(needle) >= MIN_TRIGRAM or ctx.conn.dialect.name != "sqlite" or needle.isascii()


def _pending(pattern: str) -> ColumnElement[bool]:
    """Leads not in the search index yet that match `pattern` (`ix_leads_search_pending` finds them)."""
    return and_(leads.c.search_index.is_(None), leads.c.search_text.like(pattern, escape="\\"))


def _fts_match(needle: str) -> ColumnElement[bool]:
    """The FTS5 condition on `leads_fts` for `needle`: the phrase of its trigrams, or for 1-2 characters the
    trigrams that start with it."""
    short = len(needle) < MIN_TRIGRAM
    query = _trigrams_starting_with(needle) if short else literal('"' + needle.replace('"', '""') + '"')
    match: ColumnElement[bool] = leads_fts.c.leads_fts.op("MATCH")(query)
    return match


async def common_short_term(ctx: WorkspaceContext, term: str) -> bool:
    """Whether `term` has 1-2 characters and is common in the workspace (see `SHORT_TERM_SAMPLE`); a
    workspace smaller than the sample is always tested row by row."""
    needle = search_needle(term)
    if not needle or len(needle) >= MIN_TRIGRAM:
        return False
    pattern = search_pattern(needle)
    sampled, containing = await count_sample(
        ctx,
        scoped(ctx, leads).select(leads.c.search_text),
        SHORT_TERM_SAMPLE,
        lambda sample: sample.search_text.like(pattern, escape="\\"),
    )
    return sampled < SHORT_TERM_SAMPLE or containing * 10 >= sampled


def _trigrams_starting_with(needle: str) -> ColumnElement[str]:
    """An FTS5 query matching any trigram of the index that starts with `needle` (1-2 ASCII characters),
    read from `leads_fts_vocab`; `""` (matches nothing) when there is none."""
    vocab = unscoped(leads_fts_vocab)  # type: ignore[arg-type]
    term = leads_fts_vocab.c.term
    successor = needle[:-1] + chr(ord(needle[-1]) + 1)
    alternative = literal('"') + func.replace(term, '"', '""') + literal('"')
    alternatives = func.coalesce(func.group_concat(alternative, " OR "), '""')
    query: ColumnElement[str] = (
        vocab.select(alternatives).where(term >= needle, term < successor).scalar_subquery()
    )
    return query


def filter_conditions(
    ctx: WorkspaceContext, f: LeadFilter, *, frequent_search: bool = False
) -> list[ColumnElement[bool]]:
    """SQL conditions on `leads` for a lead filter (the workspace condition comes from `scoped`);
    `frequent_search` as `search_condition`'s `frequent`."""
    conditions: list[ColumnElement[bool]] = []
    if f.search:
        conditions.append(search_condition(ctx, f.search, frequent=frequent_search))
    # `IN (members)` rather than a correlated EXISTS: a small list or label is read from its own index
    # instead of probing every lead of the workspace.
    if f.list_id:
        ll = scoped(ctx, list_leads)
        conditions.append(
            leads.c.id.in_(ll.select(list_leads.c.lead_id).where(list_leads.c.list_id == f.list_id))
        )
    if f.label_id:
        ll = scoped(ctx, lead_labels)
        if f.label_id == NO_LABEL:
            conditions.append(
                not_(exists(ll.select(lead_labels.c.lead_id).where(lead_labels.c.lead_id == leads.c.id)))
            )
        else:
            labelled = ll.select(lead_labels.c.lead_id).where(lead_labels.c.label_id == f.label_id)
            conditions.append(leads.c.id.in_(labelled))
    if f.status:
        conditions.append(leads.c.status.in_(f.status))
    if f.verify:
        conditions.append(leads.c.verify_status.in_(f.verify))
    if f.esp:
        conditions.append(leads.c.esp.in_(f.esp))
    return conditions


def target_ids(ctx: WorkspaceContext, target: LeadTarget) -> Select[Any]:
    """A sub-select of the ids of the workspace's leads that `target` names.

    Ids of other workspaces, or that do not exist, simply select nothing.
    """
    lead_table = scoped(ctx, leads)
    stmt = lead_table.select(leads.c.id)
    if target.ids is not None:
        return stmt.where(leads.c.id.in_(target.ids))
    if target.list_id is not None:
        return stmt.where(*filter_conditions(ctx, LeadFilter(list_id=target.list_id)))
    if target.filter is not None:
        return stmt.where(and_(true(), *filter_conditions(ctx, target.filter)))
    return stmt
