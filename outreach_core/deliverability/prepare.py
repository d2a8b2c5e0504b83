"""The deliverability endpoints' pre-transaction steps (`Endpoint.prepare`): the DNS lookups and the RDAP
request of a domain check, network I/O that never runs inside a transaction."""

from __future__ import annotations

from outreach_core.deliverability.checker import run_check
from outreach_core.deliverability.schemas import CheckQuery, DomainIn, DomainReport
from outreach_core.deliverability.store import domain_row
from outreach_core.kernel.endpoint import Outside


async def prepare_check_domain(outside: Outside, query: CheckQuery) -> DomainReport:
    return await run_check(outside.ports, outside.settings, outside.now(), query.domain, query.selector)


async def prepare_add_domain(outside: Outside, body: DomainIn) -> DomainReport:
    return await run_check(outside.ports, outside.settings, outside.now(), body.domain, None)


async def prepare_check_sending_domain(outside: Outside, body: DomainIn) -> DomainReport:
    """Only a sending domain of the workspace is checked (404 otherwise, before any lookup); never from
    the cache: the person asked to check again now."""
    await outside.read(domain_row, body.domain)
    return await run_check(outside.ports, outside.settings, outside.now(), body.domain, None, fresh=True)
