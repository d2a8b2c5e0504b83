"""A workspace's sending domains as the operations, the mailboxes and the campaigns read and write them:
registering domains, saving a report with its history, the `dns` badges of mailboxes and the weak domains
of a campaign."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func

from outreach_core.deliverability.schemas import DnsBadges, DomainReport, HistoryPoint, MailboxDns
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_mailboxes, mailboxes, sending_domains
from outreach_core.kernel.errors import NotFound

HISTORY = 30
"""Earlier scores kept per domain."""
RECHECK_EVERY = timedelta(days=1)
BADGES = ("mx", "spf", "dkim", "dmarc", "blacklists")
WEAK_GRADES = ("D", "F")


async def domain_row(ctx: WorkspaceContext, domain: str) -> Any:
    row = (
        await ctx.conn.execute(
            scoped(ctx, sending_domains).select().where(sending_domains.c.domain == domain)
        )
    ).one_or_none()
    if row is None:
        raise NotFound("sending domain", domain)
    return row


async def register_sending_domains(ctx: WorkspaceContext, domains: Iterable[str]) -> None:
    """Make `domains` sending domains of the workspace (a mailbox was connected on them); those not known
    yet are due for a first check by the `domains` worker at once."""
    wanted = sorted({d.lower() for d in domains if d})
    if not wanted:
        return
    table = scoped(ctx, sending_domains)
    known = set(
        (
            await ctx.conn.execute(
                table.select(sending_domains.c.domain).where(sending_domains.c.domain.in_(wanted))
            )
        ).scalars()
    )
    rows = [new_row(ctx.now, d) for d in wanted if d not in known]
    if rows:
        await ctx.conn.execute(*table.insert_many(rows))


def new_row(now: datetime, domain: str) -> dict[str, Any]:
    return {
        "domain": domain,
        "report": None,
        "score": None,
        "grade": None,
        "checked_at": None,
        "history": [],
        "next_check_at": now,
        "created_at": now,
    }


def with_report(row: Any, report: DomainReport, now: datetime) -> dict[str, Any]:
    """The columns that store `report` as a domain's latest, its previous score moved into the history."""
    history = list(row.history or []) if row is not None else []
    earlier = row is not None and row.checked_at is not None and row.score is not None
    if earlier and row.checked_at != report.checked_at:
        history.append(HistoryPoint(score=row.score, checked_at=row.checked_at).model_dump(mode="json"))
    return {
        "report": report.model_dump(mode="json"),
        "score": report.score,
        "grade": report.grade,
        "checked_at": report.checked_at,
        "history": history[-HISTORY:],
        "next_check_at": now + RECHECK_EVERY,
    }


async def save_report(ctx: WorkspaceContext, report: DomainReport) -> None:
    """Store `report` as the latest of its domain, adding the domain when the workspace does not have it."""
    table = scoped(ctx, sending_domains)
    found = (
        await ctx.conn.execute(table.select().where(sending_domains.c.domain == report.domain))
    ).one_or_none()
    values = with_report(found, report, ctx.now)
    if found is None:
        await ctx.conn.execute(table.insert({**new_row(ctx.now, report.domain), **values}))
    else:
        await ctx.conn.execute(
            table.update().where(sending_domains.c.domain == report.domain).values(**values)
        )


async def mailbox_counts(ctx: WorkspaceContext) -> dict[str, int]:
    stmt = scoped(ctx, mailboxes).select(mailboxes.c.domain, func.count()).group_by(mailboxes.c.domain)
    return {str(d): int(n) for d, n in (await ctx.conn.execute(stmt)).all()}


async def mailbox_dns(ctx: WorkspaceContext, domains: Iterable[str]) -> dict[str, MailboxDns]:
    """The `dns` field of mailboxes on `domains`: the latest score, grade and badges of each domain."""
    wanted = sorted(set(domains))
    if not wanted:
        return {}
    rows = (
        await ctx.conn.execute(
            scoped(ctx, sending_domains)
            .select(
                sending_domains.c.domain,
                sending_domains.c.report,
                sending_domains.c.score,
                sending_domains.c.grade,
                sending_domains.c.checked_at,
            )
            .where(sending_domains.c.domain.in_(wanted))
        )
    ).all()
    out = {}
    for row in rows:
        statuses = {c["id"]: c["status"] for c in (row.report or {}).get("checks", [])}
        out[row.domain] = MailboxDns(
            score=row.score,
            grade=row.grade,
            checked_at=row.checked_at,
            badges=DnsBadges(**{b: statuses.get(b) for b in BADGES}),
        )
    return out


async def weak_campaign_domains(ctx: WorkspaceContext, campaign_id: str) -> list[str]:
    """The sending domains graded D or F among those of the campaign's mailboxes, as
    "domain (grade D, score 55)"."""
    stmt = (
        scoped(ctx, sending_domains)
        .select(sending_domains.c.domain, sending_domains.c.grade, sending_domains.c.score)
        .where(
            sending_domains.c.grade.in_(WEAK_GRADES),
            sending_domains.c.domain.in_(
                scoped(ctx, campaign_mailboxes)
                .select(mailboxes.c.domain)
                .join(mailboxes, mailboxes.c.id == campaign_mailboxes.c.mailbox_id)
                .where(campaign_mailboxes.c.campaign_id == campaign_id)
            ),
        )
        .order_by(sending_domains.c.domain)
    )
    rows = (await ctx.conn.execute(stmt)).all()
    return [f"{r.domain} (grade {r.grade}, score {r.score})" for r in rows]
