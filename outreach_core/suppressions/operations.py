"""The suppression list: addresses and whole domains that are never emailed, and skipped on import.

Also the lead status rules that follow from it (see docs/lists-labels-suppressions.md): adding entries
marks the covered leads `suppressed` (unless they are won, bounced or unsubscribed, which say more);
removing entries sets leads that no suppression covers any more back to `active`.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, func

from outreach_core.kernel.bulk import chunks
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, suppressions
from outreach_core.kernel.ids import new_id
from outreach_core.suppressions.rules import Kind, parse_entries
from outreach_core.suppressions.schemas import (
    AddSuppressionsIn,
    ListSuppressionsQuery,
    RemoveSuppressionsIn,
    Suppression,
    SuppressionPage,
    SuppressionsAdded,
)
from outreach_core.targets.schemas import Removed, Suppressed, SuppressTargetIn
from outreach_core.targets.selection import target_ids
from outreach_core.targets.suppression import SUPPRESSIBLE_STATUSES, suppress_lead_ids, suppressed_condition

# Values per statement: keeps every statement far below the bind-parameter limits of both engines.
_CHUNK = 1_000

# --- operations ------------------------------------------------------------------------------------------


async def list_suppressions(ctx: WorkspaceContext, query: ListSuppressionsQuery) -> SuppressionPage:
    """List the workspace's suppression list, newest first: addresses and whole domains that are never
    emailed and are skipped when leads are imported. `search` matches part of an address or domain;
    page through with `page` and `pageSize`."""
    s = scoped(ctx, suppressions)
    conditions: list[ColumnElement[bool]] = []
    needle = (query.search or "").strip().lower()
    if needle:
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        conditions.append(suppressions.c.value.like(f"%{escaped}%", escape="\\"))
    total = (await ctx.conn.execute(s.select(func.count()).where(*conditions))).scalar_one()
    rows = (
        await ctx.conn.execute(
            s.select(
                suppressions.c.id,
                suppressions.c.value,
                suppressions.c.kind,
                suppressions.c.reason,
                suppressions.c.created_at,
            )
            .where(*conditions)
            .order_by(suppressions.c.created_at.desc(), suppressions.c.id.desc())
            .limit(query.page_size)
            .offset((query.page - 1) * query.page_size)
        )
    ).all()
    return SuppressionPage(
        suppressions=[Suppression.from_row(r) for r in rows],
        total=total,
        page=query.page,
        page_size=query.page_size,
    )


async def add_suppressions(ctx: WorkspaceContext, body: AddSuppressionsIn) -> SuppressionsAdded:
    """Add email addresses and/or whole domains (`example.com` or `@example.com`) to the suppression list,
    up to 10,000 per call. Suppressed addresses are never emailed and are skipped by imports; a domain
    covers every address at it. Leads they cover that are active, replied or interested get status
    `suppressed`. Entries already on the list are counted as `existing`; entries that are neither an
    address nor a domain are counted as `invalid` and ignored."""
    parsed = parse_entries(body.entries)
    added = await _insert_values(ctx, parsed.values, body.reason)
    await _mark_covered_leads(ctx, parsed.emails, parsed.domains)
    return SuppressionsAdded(
        added=added,
        existing=len(parsed.values) - added,
        invalid=parsed.invalid,
        invalid_entries=parsed.invalid_entries,
    )


async def remove_suppressions(ctx: WorkspaceContext, body: RemoveSuppressionsIn) -> Removed:
    """Take addresses and/or domains off the suppression list, so they can be emailed again. Give them as
    they were added (an address, or a domain). Leads with status `suppressed` that no remaining entry covers
    go back to `active`. Returns how many entries were removed."""
    parsed = parse_entries(body.entries)
    s = scoped(ctx, suppressions)
    removed_emails: list[str] = []
    removed_domains: list[str] = []
    for chunk in chunks(list(parsed.values.items()), _CHUNK):
        result = await ctx.conn.execute(
            s.delete()
            .where(suppressions.c.value.in_([value for value, _ in chunk]))
            .returning(suppressions.c.value, suppressions.c.kind)
        )
        for value, kind in result.all():
            (removed_emails if kind == "email" else removed_domains).append(value)
    await _restore_uncovered_leads(ctx, removed_emails, removed_domains)
    return Removed(removed=len(removed_emails) + len(removed_domains))


async def suppress_leads(ctx: WorkspaceContext, body: SuppressTargetIn) -> Suppressed:
    """Add the addresses of the targeted leads to the suppression list (with an optional `reason`), so they
    are never emailed again. `target` is exactly one of `{"ids": [...]}`, `{"listId": "..."}`,
    `{"filter": {...list_leads filters...}}` or `{"all": true}`. The leads stay; those that are active,
    replied or interested get status `suppressed`. Returns how many leads' addresses were newly
    suppressed (already suppressed ones are not counted)."""
    return Suppressed(suppressed=await suppress_lead_ids(ctx, target_ids(ctx, body.target), body.reason))


# --- helpers ---------------------------------------------------------------------------------------------


async def _insert_values(ctx: WorkspaceContext, values: dict[str, Kind], reason: str | None) -> int:
    """Insert the values not on the list yet; returns how many were inserted."""
    s = scoped(ctx, suppressions)
    added = 0
    for chunk in chunks(list(values.items()), _CHUNK):
        present = set(
            (
                await ctx.conn.execute(
                    s.select(suppressions.c.value).where(suppressions.c.value.in_([v for v, _ in chunk]))
                )
            )
            .scalars()
            .all()
        )
        rows = [
            {"id": new_id("sup"), "kind": kind, "value": value, "reason": reason, "created_at": ctx.now}
            for value, kind in chunk
            if value not in present
        ]
        if rows:
            await ctx.conn.execute(*s.insert_many(rows))
            added += len(rows)
    return added


async def _mark_covered_leads(ctx: WorkspaceContext, emails: list[str], domains: list[str]) -> None:
    """Status rule: leads at these addresses or domains become `suppressed` (active/replied/interested)."""
    ld = scoped(ctx, leads)
    for column, values in ((leads.c.email, emails), (leads.c.domain, domains)):
        for chunk in chunks(values, _CHUNK):
            await ctx.conn.execute(
                ld.update()
                .where(column.in_(chunk), leads.c.status.in_(SUPPRESSIBLE_STATUSES))
                .values(status="suppressed", updated_at=ctx.now)
            )


async def _restore_uncovered_leads(ctx: WorkspaceContext, emails: list[str], domains: list[str]) -> None:
    """Status rule: `suppressed` leads at these addresses or domains that no entry covers any more become
    `active` again."""
    ld = scoped(ctx, leads)
    still = suppressed_condition(ctx, leads.c.email, leads.c.domain)
    for column, values in ((leads.c.email, emails), (leads.c.domain, domains)):
        for chunk in chunks(values, _CHUNK):
            await ctx.conn.execute(
                ld.update()
                .where(column.in_(chunk), leads.c.status == "suppressed", ~still)
                .values(status="active", updated_at=ctx.now)
            )
