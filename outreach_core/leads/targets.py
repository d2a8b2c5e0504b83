"""Selecting leads: the filters of `list_leads` and the lead target object, as set-based SQL.

Everything here returns SQL conditions or sub-selects of lead ids, never id lists in Python, so an action
on "all leads" or "this filter" runs as one statement whatever the number of leads.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, and_, exists, literal_column, not_, or_, true

from outreach_core.context import WorkspaceContext, scoped, unscoped
from outreach_core.db.tables import lead_labels, leads, leads_fts, list_leads
from outreach_core.leads.schemas import LeadFilter, LeadTarget

MIN_TRIGRAM = 3
NO_LABEL = "none"


def search_condition(ctx: WorkspaceContext, term: str, *, frequent: bool = False) -> ColumnElement[bool]:
    """Substring match over email, name and company (case-insensitive).

    Leads the enrich worker has indexed (`search_index` set) are found through the trigram index: SQLite's
    FTS5 table `leads_fts`, PostgreSQL's pg_trgm GIN index on `search_index`. Leads not indexed yet (just
    imported) are matched with `LIKE` on `search_text`, found through the partial index
    `ix_leads_search_pending`, so results are complete at once. Terms shorter than 3 characters cannot use a
    trigram index and scan the workspace's leads.

    `frequent` (the caller knows many leads match): test each row with `LIKE` on `search_text` instead, so
    that a page walks its sort index and stops at its last match rather than first collecting every match
    from the trigram index (189,314 of them for one term at a million leads). Same matches: `search_index`
    is a copy of `search_text` once set.
    """
    needle = term.strip().lower()
    if not needle:
        return true()
    pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    if frequent or len(needle) < MIN_TRIGRAM:
        return leads.c.search_text.like(pattern, escape="\\")
    pending = and_(leads.c.search_index.is_(None), leads.c.search_text.like(pattern, escape="\\"))
    if ctx.conn.dialect.name == "sqlite":
        phrase = '"' + needle.replace('"', '""') + '"'
        fts = unscoped(leads_fts)  # type: ignore[arg-type]
        indexed = fts.select(leads_fts.c.rowid).where(leads_fts.c.leads_fts.op("MATCH")(phrase))
        unindexed = scoped(ctx, leads).select(literal_column("leads.rowid")).where(pending).correlate(None)
        found: ColumnElement[bool] = literal_column("leads.rowid").in_(indexed.union_all(unindexed))
        return found
    return or_(leads.c.search_index.like(pattern, escape="\\"), pending)


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
