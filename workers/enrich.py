"""Enriches leads waiting for it (email provider, mail server, country, timezone) and finishes imports.

Mail-server lookups happen before the write transaction opens: the domains of the next batch that need DNS
are read (read-only transaction), looked up with no transaction open, and their answers stored in a short
transaction; only then does `enrich_pending` write the leads. On SQLite, where a write transaction holds the
database's single write lock, this keeps slow or unanswered DNS from blocking imports and every other
writer. `enrich_pending` still looks up any domain it finds unresolved (leads added in between), so it is
correct on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.enrichment.pipeline import BATCH, domains_to_resolve, enrich_pending
from outreach_core.targets.mail_domains import DomainInfo, resolve_domains, store_domains

if TYPE_CHECKING:
    from outreach_core.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One batch of up to `BATCH` leads; returns leads enriched plus imports finished."""
    resolved: dict[str, DomainInfo] = {}
    if runtime.ports.dns is not None:
        domains = await runtime.system_read(domains_to_resolve, limit=BATCH)
        if domains:
            resolved = await resolve_domains(runtime.ports.dns, domains)
            await runtime.system(store_domains, resolved)
    return await runtime.system(enrich_pending, limit=BATCH, resolved=resolved)
