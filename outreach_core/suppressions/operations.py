"""The suppression list: addresses and whole domains that are never emailed, and skipped on import.

Also the lead status rules that follow from it (see docs/lists-labels-suppressions.md): adding entries
marks the covered leads `suppressed` (unless they are won, bounced or unsubscribed, which say more);
removing entries sets leads that no suppression covers any more back to `active`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, String, exists, func, literal

from outreach_core.bulk import insert_from_select, one_of, row_ids
from outreach_core.context import WorkspaceContext, scoped
from outreach_core.db.tables import leads, suppressions
from outreach_core.db.types import UtcDateTime
from outreach_core.ids import new_id
from outreach_core.leads.schemas import Removed, Suppressed, SuppressTargetIn
from outreach_core.leads.targets import target_ids
from outreach_core.suppressions.rules import Kind, parse_entries
from outreach_core.suppressions.schemas import (
    AddSuppressionsIn,
    ListSuppressionsQuery,
    RemoveSuppressionsIn,
    Suppression,
    SuppressionPage,
    SuppressionsAdded,
)

# Statuses that suppression overrides; won, bounced and unsubscribed say more and are kept.
SUPPRESSIBLE_STATUSES = ("active", "replied", "interested")
# Values per statement: keeps every statement far below the bind-parameter limits of both engines.
_CHUNK = 1_000
# Keys per look-up in `suppressed_emails` (one query for an import chunk of 5,000 rows).
_LOOKUP_CHUNK = 10_000

T = TypeVar("T")


def _chunks(items: Sequence[T], size: int = _CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


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
        suppressions=[
            Suppression(id=r.id, value=r.value, kind=r.kind, reason=r.reason, created_at=r.created_at)
            for r in rows
        ],
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
    for chunk in _chunks(list(parsed.values.items())):
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


# --- used by other domains ---------------------------------------------------------------------------------


def suppressed_condition(
    ctx: WorkspaceContext, email_col: ColumnElement[str], domain_col: ColumnElement[str]
) -> ColumnElement[bool]:
    """True when the address in `email_col`, or its domain in `domain_col`, is on this workspace's
    suppression list. An EXISTS over the `(workspace_id, value)` index, for set-based queries."""
    s = scoped(ctx, suppressions)
    return exists(s.select(suppressions.c.id).where(suppressions.c.value.in_([email_col, domain_col])))


async def suppressed_emails(ctx: WorkspaceContext, pairs: list[tuple[str, str]]) -> set[str]:
    """Of the given normalised `(email, domain)` pairs, the emails that are suppressed (the address or its
    domain is on the list). One query for up to 5,000 pairs."""
    keys = list({key for pair in pairs for key in pair})
    s = scoped(ctx, suppressions)
    found: set[str] = set()
    for chunk in _chunks(keys, _LOOKUP_CHUNK):
        found.update(
            (
                await ctx.conn.execute(
                    s.select(suppressions.c.value).where(one_of(ctx, suppressions.c.value, chunk))
                )
            )
            .scalars()
            .all()
        )
    return {email for email, domain in pairs if email in found or domain in found}


async def suppress_lead_ids(ctx: WorkspaceContext, lead_ids: Select[Any], reason: str | None) -> int:
    """Suppress the addresses of the leads in the sub-select `lead_ids` (set-based); mark those leads
    `suppressed` where the status rules allow. Returns how many addresses were newly suppressed."""
    ld = scoped(ctx, leads)
    s = scoped(ctx, suppressions)
    source = ld.select(
        row_ids("sup", leads.c.id),
        literal("email", String),
        leads.c.email,
        literal(reason, String),
        literal(ctx.now, UtcDateTime),
    ).where(
        leads.c.id.in_(lead_ids),
        ~exists(s.select(suppressions.c.id).where(suppressions.c.value == leads.c.email)),
    )
    result = await ctx.conn.execute(
        insert_from_select(ctx, suppressions, ["id", "kind", "value", "reason", "created_at"], source)
    )
    await ctx.conn.execute(
        ld.update()
        .where(leads.c.id.in_(lead_ids), leads.c.status.in_(SUPPRESSIBLE_STATUSES))
        .values(status="suppressed", updated_at=ctx.now)
    )
    return int(result.rowcount)


# --- helpers ---------------------------------------------------------------------------------------------


async def _insert_values(ctx: WorkspaceContext, values: dict[str, Kind], reason: str | None) -> int:
    """Insert the values not on the list yet; returns how many were inserted."""
    s = scoped(ctx, suppressions)
    added = 0
    for chunk in _chunks(list(values.items())):
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
        for chunk in _chunks(values):
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
        for chunk in _chunks(values):
            await ctx.conn.execute(
                ld.update()
                .where(column.in_(chunk), leads.c.status == "suppressed", ~still)
                .values(status="active", updated_at=ctx.now)
            )
