"""The suppression list as the other lead domains use it: is an address suppressed, and suppressing the
addresses of some leads (set-based). The suppressions domain owns the list and uses these too; its status
rules are in docs/lists-labels-suppressions.md."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, String, exists, literal

from outreach_core.kernel.bulk import chunks, insert_from_select, one_of, row_ids
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, suppressions
from outreach_core.kernel.db.types import UtcDateTime

# Statuses that suppression overrides; won, bounced and unsubscribed say more and are kept.
SUPPRESSIBLE_STATUSES = ("active", "replied", "interested")
# Keys per look-up in `suppressed_emails` (one query for an import chunk of 5,000 rows).
_LOOKUP_CHUNK = 10_000


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
    for chunk in chunks(keys, _LOOKUP_CHUNK):
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
