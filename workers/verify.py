"""Verifies queued leads (`verify_status = 'verifying'`) in batches, across workspaces.

One tick: claim a batch (short transaction), look up the mail servers of its domains and ask the verifier
API outside any transaction, then write every result in one transaction. Safe with any number of workers
against one database; see `outreach_core.verification.operations` and `docs/verification.md`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from outreach_core.enrichment.operations import (
    DomainInfo,
    clean_domain,
    known_domains,
    resolve_domains,
    store_domains,
)
from outreach_core.verification.operations import (
    API_CONCURRENCY,
    ClaimedLead,
    Outcome,
    any_due,
    ask_verifier,
    claim_leads_to_verify,
    record_verification,
)
from outreach_core.verification.rules import (
    MAX_ATTEMPTS,
    ApiFailure,
    MailServer,
    Verdict,
    decide,
    local_verdict,
    precheck,
    verifier_enabled,
)

if TYPE_CHECKING:
    from outreach_core.runtime import Runtime

BATCH = 200
GAVE_UP = Verdict("unknown", "verification did not finish")


async def tick(runtime: Runtime, batch: int = BATCH) -> int:
    """Verify one batch of queued leads; returns how many leads were claimed (0 when none were due)."""
    if not await runtime.system_read(any_due):  # idle polls take no write lock (SQLite has only one)
        return 0
    claimed = await runtime.system(claim_leads_to_verify, batch)
    if not claimed:
        return 0
    outcomes = await _verify(runtime, claimed)
    await runtime.system(record_verification, outcomes)
    return len(claimed)


async def _mail_servers(runtime: Runtime, domains: list[str]) -> dict[str, DomainInfo]:
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


async def _verify(runtime: Runtime, claimed: list[ClaimedLead]) -> list[Outcome]:
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
