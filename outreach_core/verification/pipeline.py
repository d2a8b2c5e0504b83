"""The verification pipeline: what the `verify` worker runs, one batch of queued leads (`verifying`) across
workspaces at a time, in three short transactions with the network I/O between them, never inside one:

1. `claim_leads_to_verify` picks due `verifying` leads across workspaces (`FOR UPDATE SKIP LOCKED` on
   PostgreSQL; SQLite serialises writers) and stamps each with a claim marker in `verify_reason`;
2. mail-server lookups (one per domain, through the shared cache `outreach_core.targets.mail_domains`:
   cached mail servers are trusted, a cached "no mail servers" is looked up again) and verifier API calls
   (`ask_verifier`) run outside any transaction;
3. `record_verification` writes every result with one statement per kind (`bulk.update_each`), only
   where the lead still carries this worker's marker (a lead re-queued or re-claimed meanwhile is left to
   its new owner), adds the newly undeliverable leads to their import's counter and moves finished imports
   on.

Safe with any number of workers against one database; see `docs/verification.md`.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, and_, func, literal, not_, or_

from outreach_core.kernel.bulk import Values, update_each
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import lead_imports, leads, workspaces
from outreach_core.kernel.ports import HttpClient
from outreach_core.kernel.settings import Settings
from outreach_core.targets.import_progress import finish_imports, import_parts_queued
from outreach_core.targets.mail_domains import (
    DomainInfo,
    clean_domain,
    known_domains,
    resolve_domains,
    store_domains,
)
from outreach_core.verification.rules import (
    MARKER_PREFIX,
    MAX_ATTEMPTS,
    ApiFailure,
    MailServer,
    Retry,
    Verdict,
    api_request_body,
    api_request_headers,
    claim_marker,
    decide,
    due_bound,
    local_verdict,
    parse_api_answer,
    precheck,
    previous_attempts,
    verifier_enabled,
)

if TYPE_CHECKING:
    from outreach_core.kernel.endpoint import Background

API_CONCURRENCY = 16
"""Verifier API calls in flight at once, per worker."""
MIN_LEASE = timedelta(minutes=5)
GAVE_UP = Verdict("unknown", "verification did not finish")


@dataclass(frozen=True)
class ClaimedLead:
    """A `verifying` lead a worker has claimed; `marker` is the claim it must still hold to write."""

    id: str
    email: str
    import_id: str | None
    use_api: bool
    first_time: bool  # never verified before: an invalid result counts as undeliverable for its import
    attempt: int
    marker: str


@dataclass(frozen=True)
class Outcome:
    lead: ClaimedLead
    result: Verdict | Retry


def claim_lease(settings: Settings, batch: int) -> timedelta:
    """How long a claim keeps other workers away: well above the time a batch's I/O can take."""
    rounds = math.ceil(batch / API_CONCURRENCY)
    return max(MIN_LEASE, timedelta(seconds=60 + 2 * rounds * (settings.verifier_timeout_s + 1)))


def _due(ctx: SystemContext) -> ColumnElement[bool]:
    """`verifying` leads no worker holds: never claimed, or their claim or retry time is up."""
    reason: Any = leads.c.verify_reason
    bound: Any = literal(due_bound(ctx.now))
    if ctx.conn.dialect.name == "postgresql":  # byte order, whatever the database's collation
        reason, bound = reason.collate("C"), bound.collate("C")
    return or_(
        leads.c.verify_reason.is_(None),
        not_(leads.c.verify_reason.startswith(MARKER_PREFIX, autoescape=True)),
        reason < bound,
    )


def _due_leads(ctx: SystemContext, *columns: Any) -> Any:
    """SELECT `columns` of the due `verifying` leads of every workspace.

    Reaching leads workspace by workspace keeps the `(workspace_id, verify_status, ...)` index in use, so an
    idle poll costs one index probe per workspace, not a scan of every lead. On SQLite, `id || ''` stops the
    planner from turning the join around (scanning leads, probing workspaces by primary key)."""
    workspace_id: Any = workspaces.c.id
    if ctx.conn.dialect.name == "sqlite":
        workspace_id = workspace_id.concat("")
    source = workspaces.join(
        leads, and_(leads.c.workspace_id == workspace_id, leads.c.verify_status == "verifying")
    )
    return system_scope(leads).select(*columns).select_from(source).where(_due(ctx))


async def any_due(ctx: SystemContext) -> bool:
    """Read-only: is any lead of any workspace due for verification? (The idle poll, without a write lock.)"""
    return (await ctx.conn.execute(_due_leads(ctx, leads.c.id).limit(1))).first() is not None


async def claim_leads_to_verify(ctx: SystemContext, limit: int) -> list[ClaimedLead]:
    """Claim up to `limit` due `verifying` leads of any workspace for this worker.

    Each claimed lead gets the marker "checking; next try after <now + lease> (attempt n)" in its reason,
    in this same short transaction. Rows locked by another worker's claim are skipped (PostgreSQL), and a
    claim whose worker died expires after the lease, counting as a spent attempt.
    """
    lead_table = system_scope(leads)
    columns = (
        leads.c.id,
        leads.c.email,
        leads.c.import_id,
        leads.c.verify_api,
        leads.c.verify_reason,
        leads.c.verified_at,
    )
    stmt = _due_leads(ctx, *columns).limit(limit).with_for_update(skip_locked=True, of=leads)
    rows = (await ctx.conn.execute(stmt)).all()
    if not rows:
        return []
    until = ctx.now + claim_lease(ctx.settings, limit)
    claimed = []
    for row in rows:
        attempt = previous_attempts(row.verify_reason) + 1
        claimed.append(
            ClaimedLead(
                id=row.id,
                email=row.email,
                import_id=row.import_id,
                use_api=bool(row.verify_api),
                first_time=row.verified_at is None,
                attempt=attempt,
                marker=claim_marker(until, attempt),
            )
        )
    await update_each(ctx, lead_table.update(), [{"id": c.id, "verify_reason": c.marker} for c in claimed])
    return claimed


async def ask_verifier(settings: Settings, http: HttpClient, email: str) -> Verdict | ApiFailure:
    """One verifier API call (protocol in `docs/verification.md`): its verdict, or why there is none."""
    if not settings.verifier_url:
        raise ValueError("no verifier API is configured")
    status, body = await http.post_json(
        settings.verifier_url,
        api_request_body(email),
        api_request_headers(settings.verifier_api_key),
        settings.verifier_timeout_s,
    )
    return parse_api_answer(status, body)


async def record_verification(ctx: SystemContext, outcomes: list[Outcome]) -> None:
    """Write a batch's outcomes in this one transaction.

    Final verdicts set status, reason and `verified_at`; retries only replace the marker. Both apply only
    where the lead is still `verifying` with this worker's claim marker. Leads of an import whose first
    verification made them invalid are added to `lead_imports.undeliverable`, counted from what was
    actually written, and imports whose last lead was verified become `done` (`finish_imports`).
    """
    lead_table = system_scope(leads)

    def still_ours(v: Values) -> list[ColumnElement[bool]]:
        return [leads.c.verify_status == "verifying", leads.c.verify_reason == v["marker"]]

    finals = [(o.lead, o.result) for o in outcomes if isinstance(o.result, Verdict)]
    retries = [(o.lead, o.result) for o in outcomes if isinstance(o.result, Retry)]
    marker_type = {"marker": leads.c.verify_reason.type}
    if finals:
        await update_each(
            ctx,
            lead_table.update().values(verified_at=ctx.now),
            [
                {
                    "id": lead.id,
                    "marker": lead.marker,
                    "verify_status": verdict.status,
                    "verify_reason": verdict.reason,
                }
                for lead, verdict in finals
            ],
            where=still_ours,
            values=lambda v: {"verify_status": v["verify_status"], "verify_reason": v["verify_reason"]},
            types=marker_type,
        )
    if retries:
        await update_each(
            ctx,
            lead_table.update(),
            [
                {"id": lead.id, "marker": lead.marker, "verify_reason": retry.reason}
                for lead, retry in retries
            ],
            where=still_ours,
            values=lambda v: {"verify_reason": v["verify_reason"]},
            types=marker_type,
        )
    undeliverable = [
        lead
        for lead, verdict in finals
        if verdict.status == "invalid" and lead.import_id is not None and lead.first_time
    ]
    if undeliverable:
        await _count_undeliverable(ctx, undeliverable)
    if any(o.lead.import_id is not None for o in outcomes):
        await finish_imports(ctx)


async def _count_undeliverable(ctx: SystemContext, candidates: list[ClaimedLead]) -> None:
    """`undeliverable += n` for each import, n = its candidates this transaction actually made invalid."""
    written_now = (
        system_scope(leads)
        .select(func.count())
        .where(
            leads.c.import_id == lead_imports.c.id,
            leads.c.id.in_([lead.id for lead in candidates]),
            leads.c.verify_status == "invalid",
            leads.c.verified_at == ctx.now,
        )
        .scalar_subquery()
    )
    imports = system_scope(lead_imports)
    await ctx.conn.execute(
        imports.update()
        .where(lead_imports.c.id.in_(sorted({str(lead.import_id) for lead in candidates})))
        .values(undeliverable=lead_imports.c.undeliverable + written_now)
    )


# --- one batch ---------------------------------------------------------------------------------------------


async def verify_batch(runtime: Background, batch: int) -> int:
    """Verify one batch of up to `batch` queued leads; returns how many leads were claimed (0 when none
    were due)."""
    if not await runtime.system_read(any_due):  # idle polls take no write lock (SQLite has only one)
        return 0
    if await runtime.system_read(import_parts_queued):
        return 0  # storing comes first: verified once every queued import part is merged
    claimed = await runtime.system(claim_leads_to_verify, batch)
    if not claimed:
        return 0
    outcomes = await _verify(runtime, claimed)
    await runtime.system(record_verification, outcomes)
    return len(claimed)


async def _mail_servers(runtime: Background, domains: list[str]) -> dict[str, DomainInfo]:
    """Mail-server facts for `domains`, keyed as given. Cached mail servers are trusted; a cached "no mail
    servers" is looked up again, since someone asked to verify and the domain may have been fixed since.
    DNS runs with no transaction open; the answers are stored in the shared cache in a short one."""
    known = await runtime.system_read(known_domains, domains, trust_negative=False)
    missing = sorted({clean_domain(d) for d in domains} - known.keys())
    if missing:
        if runtime.ports.dns is None:
            raise RuntimeError("no DNS resolver is configured (Ports.dns): mail servers cannot be looked up")
        looked_up = await resolve_domains(runtime.ports.dns, missing)
        await runtime.system(store_domains, looked_up)
        known.update(looked_up)
    return {d: known[clean_domain(d)] for d in domains}


async def _verify(runtime: Background, claimed: list[ClaimedLead]) -> list[Outcome]:
    settings = runtime.settings
    use_api = verifier_enabled(settings.verifier_url)
    http = runtime.ports.http
    if use_api and http is None and any(lead.use_api for lead in claimed):
        raise RuntimeError("a verifier API is configured but no HTTP client is wired into the runtime ports")

    # Claimed once more after its last attempt died with its worker (the claim expired): not tried again.
    gave_up = {lead.id for lead in claimed if lead.attempt > MAX_ATTEMPTS}
    todo = [lead for lead in claimed if lead.id not in gave_up]

    # Local checks: syntax and disposable domains, then one mail-server lookup per remaining domain.
    domains: dict[str, str] = {}
    local: dict[str, Verdict] = {}
    for lead in todo:
        domain, verdict = precheck(lead.email)
        if verdict is not None:
            local[lead.id] = verdict
        elif domain is not None:
            domains[lead.id] = domain
    servers = await _mail_servers(runtime, sorted(set(domains.values()))) if domains else {}
    emails = {lead.id: lead.email for lead in todo}
    for lead_id, domain in domains.items():
        info = servers.get(domain)
        server = (
            MailServer(has_mx=info.has_mx, lookup_failed=info.lookup_failed)
            if info is not None
            else MailServer(has_mx=False, lookup_failed=True)
        )
        local[lead_id] = local_verdict(emails[lead_id], server)

    # The verifier API, for leads queued with it whose address is not already invalid locally.
    answers: dict[str, Verdict | ApiFailure] = {}
    if use_api and http is not None:
        ask = [lead for lead in todo if lead.use_api and not local[lead.id].is_final_locally]
        limit = asyncio.Semaphore(API_CONCURRENCY)

        async def one(lead: ClaimedLead) -> None:
            async with limit:
                answers[lead.id] = await ask_verifier(settings, http, lead.email)

        async with asyncio.TaskGroup() as group:
            for lead in ask:
                group.create_task(one(lead))

    now = runtime.ports.clock.now()
    outcomes = [Outcome(lead, GAVE_UP) for lead in claimed if lead.id in gave_up]
    outcomes += [
        Outcome(lead, decide(local[lead.id], answers.get(lead.id), lead.attempt, now)) for lead in todo
    ]
    return outcomes
