"""Deliverability: check any domain, and keep a workspace's sending domains graded (docs/deliverability.md).

The lookups run in each endpoint's `prepare` step (`prepare.py`), outside any transaction; the operations
only store and read what they found.
"""

from __future__ import annotations

from outreach_core.deliverability.rules import normalize_domain
from outreach_core.deliverability.schemas import (
    CheckQuery,
    DomainIn,
    DomainItem,
    DomainReport,
    HistoryPoint,
)
from outreach_core.deliverability.store import domain_row, mailbox_counts, save_report
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import sending_domains
from outreach_core.kernel.errors import Conflict
from outreach_core.kernel.wire import Ok


async def check_domain(ctx: WorkspaceContext, query: CheckQuery, prepared: DomainReport) -> DomainReport:
    """Check how ready a domain is to send cold email, before sending a single one. `domain` may be a
    domain, a URL or an email address. Looks up MX (who receives its mail: google, microsoft, other, none),
    SPF (parsed, DNS lookups counted against the limit of 10), DKIM (common selectors plus `selector`: key
    present, type, size), DMARC (policy, pct, rua, alignment advice), blocklists (the mail servers' addresses
    and the domain on the zones this server is configured with), domain age (RDAP, when configured) and
    whether the domain exists. Each check has status pass/warn/fail/info (info = could not be checked, with
    the reason), points of max, a summary, details, a concrete `fix` (the exact record to publish) and
    `source` (an RFC, a mailbox provider's sender rules, or our opinion). `score` 0-100, `grade` A-F and a
    plain-language `verdict`. Results are cached 10 minutes (`cached: true`). Nothing is stored."""
    return prepared


async def list_domains(ctx: WorkspaceContext) -> list[DomainItem]:
    """The workspace's sending domains (added with add_domain, or the domain of any connected mailbox),
    each with how many mailboxes use it, its latest check report (null until the first check finished)
    and up to 30 earlier scores, oldest first. Every domain is checked again daily."""
    rows = (
        await ctx.conn.execute(scoped(ctx, sending_domains).select().order_by(sending_domains.c.domain))
    ).all()
    counts = await mailbox_counts(ctx)
    return [
        DomainItem(
            domain=row.domain,
            mailboxes=counts.get(row.domain, 0),
            report=DomainReport.model_validate(row.report) if row.report else None,
            history=[HistoryPoint.model_validate(h) for h in row.history or []],
        )
        for row in rows
    ]


async def add_domain(ctx: WorkspaceContext, body: DomainIn, prepared: DomainReport) -> DomainReport:
    """Add a sending domain (a domain, URL or email address is accepted) and check it now: the report says
    what to fix, with the exact DNS records, and works before any mailbox is connected. Adding a domain the
    workspace already has stores the new report. It is checked again daily (list_domains)."""
    await save_report(ctx, prepared)
    return prepared


async def check_sending_domain(ctx: WorkspaceContext, body: DomainIn, prepared: DomainReport) -> DomainReport:
    """Check one of the workspace's sending domains again now (after fixing DNS records), bypassing the
    10-minute cache; the previous score goes into its history. not_found when it is not a sending domain
    of the workspace (add it with add_domain)."""
    await domain_row(ctx, body.domain)
    await save_report(ctx, prepared)
    return prepared


async def delete_domain(ctx: WorkspaceContext, domain: str) -> Ok:
    """Remove a sending domain and its history. Refused with conflict while a connected mailbox uses the
    domain (delete or move those mailboxes first). not_found when the workspace has no such sending domain
    (also for text that is not a domain at all)."""
    try:
        name = normalize_domain(domain)
    except ValueError:  # a mailbox's domain under no public suffix (on-premises names) is stored as typed
        name = domain.strip().lower().rstrip(".")
    await domain_row(ctx, name)
    using = (await mailbox_counts(ctx)).get(name, 0)
    if using:
        raise Conflict(
            f"{using} mailbox{'es' if using != 1 else ''} of this workspace use{'s' if using == 1 else ''} "
            f"{name}; delete them first.",
            {"domain": name, "mailboxes": using},
        )
    await ctx.conn.execute(scoped(ctx, sending_domains).delete().where(sending_domains.c.domain == name))
    return Ok()
