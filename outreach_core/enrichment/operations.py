"""Enrichment of leads: email provider and mail server per domain, country and timezone per lead.

System operations (no caller): the enrichment worker runs them across every workspace, and the verification
worker asks `mx_for_domains` for mail servers. The rules themselves are in `rules.py`; docs/enrichment.md
describes the behaviour for users and operators.

- Each distinct domain is resolved once: a well-known consumer domain (`gmail.com`) needs no DNS; otherwise
  `domain_cache` answers while fresh, else one MX lookup through `ctx.ports.dns`, at most
  `LOOKUP_CONCURRENCY` at a time. Definite answers are cached: mail servers for `CACHE_TTL`, "no mail
  servers" (no MX, null MX, NXDOMAIN) for the negative TTL DNS gave with it (RFC 2308, the SOA's), at most
  `NEGATIVE_CACHE_MAX`. A lookup that failed (timeout, server failure) is not cached, so the next lead on
  that domain asks again. Verification (`workers/verify.py`) trusts only cached mail servers and looks
  "no mail servers" up again.
- Leads are written in one `executemany` per batch, never one statement per lead in a loop, and a value the
  user gave (country, timezone) is never replaced by an inferred one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

import dns.exception
import structlog
from sqlalchemy import bindparam, not_, or_
from sqlalchemy.dialects import postgresql, sqlite

from outreach_core.bulk import byte_length
from outreach_core.context import SystemContext, system_scope
from outreach_core.db.maintenance import refresh_lead_statistics
from outreach_core.db.tables import domain_cache, lead_imports, leads
from outreach_core.enrichment.rules import (
    classify_esp,
    consumer_esp,
    infer_country,
    infer_timezone,
    parse_mx,
)
from outreach_core.geo import normalize_country, normalize_timezone
from outreach_core.leads.rules import SEARCH_INDEX_MAX_BYTES
from outreach_core.leads.schemas import ESPS, Esp
from outreach_core.ports import DnsResolver

__all__ = [
    "BATCH",
    "CACHE_TTL",
    "LOOKUP_CONCURRENCY",
    "NEGATIVE_CACHE_DEFAULT",
    "NEGATIVE_CACHE_MAX",
    "DomainInfo",
    "cache_lifetime",
    "clean_domain",
    "domains_to_resolve",
    "enrich_pending",
    "finish_imports",
    "known_domains",
    "mx_for_domains",
    "resolve_domains",
    "store_domains",
]

BATCH = 5_000
SEARCH_BATCH = 2_000
"""Leads taken per `enrich_pending` call by default (one import chunk)."""
CACHE_TTL = timedelta(days=7)
"""How long a cached answer with mail servers is used before the domain is looked up again."""
NEGATIVE_CACHE_MAX = timedelta(hours=1)
"""The longest "no mail servers" (no MX, null MX, NXDOMAIN) is trusted, whatever DNS says: a domain may be
fixed at any time, and its leads would be verified invalid meanwhile."""
NEGATIVE_CACHE_DEFAULT = timedelta(minutes=5)
"""How long "no mail servers" is trusted when the answer came without an SOA record (no negative TTL)."""
LOOKUP_CONCURRENCY = 20
"""MX lookups in flight at once."""

_CHUNK = 500  # domains per IN list or multi-row upsert: far below every engine's bound-parameter limit
_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class DomainInfo:
    """What is known about one domain's mail servers.

    `has_mx` is meaningful only when `lookup_failed` is False. Well-known consumer domains are answered from a
    table without DNS: `has_mx` True and `mx_host` None (no lookup was made)."""

    esp: Esp
    mx_host: str | None
    has_mx: bool
    lookup_failed: bool = False
    ttl_s: int | None = field(default=None, compare=False)  # what DNS said the answer may be cached for

    @classmethod
    def from_answers(cls, answers: list[str], ttl_s: int | None = None) -> DomainInfo:
        """From MX answers as the DNS port gives them (`"10 mx.example.com."`); empty = no mail servers."""
        hosts = parse_mx(answers)
        if not hosts:
            return cls(esp="unknown", mx_host=None, has_mx=False, ttl_s=ttl_s)
        return cls(esp=classify_esp(hosts), mx_host=hosts[0], has_mx=True, ttl_s=ttl_s)


def cache_lifetime(info: DomainInfo) -> timedelta:
    """How long a definite answer is kept in `domain_cache`: `CACHE_TTL` with mail servers; otherwise the
    negative TTL DNS gave (`NEGATIVE_CACHE_DEFAULT` without one), at most `NEGATIVE_CACHE_MAX`."""
    if info.has_mx:
        return CACHE_TTL
    if info.ttl_s is None:
        return NEGATIVE_CACHE_DEFAULT
    return min(timedelta(seconds=max(0, info.ttl_s)), NEGATIVE_CACHE_MAX)


LOOKUP_FAILED = DomainInfo(esp="unknown", mx_host=None, has_mx=False, lookup_failed=True)
_NO_DOMAIN = DomainInfo(esp="unknown", mx_host=None, has_mx=False)


def clean_domain(domain: str) -> str:
    return domain.strip().lower().rstrip(".")


def _consumer_info(domain: str) -> DomainInfo | None:
    esp = consumer_esp(domain)
    return DomainInfo(esp=esp, mx_host=None, has_mx=True) if esp is not None else None


def _require_dns(ctx: SystemContext) -> DnsResolver:
    if ctx.ports.dns is None:
        raise RuntimeError("no DNS resolver is configured (Ports.dns): mail servers cannot be looked up")
    return ctx.ports.dns


# --- DNS and the domain cache -----------------------------------------------------------------------------


async def resolve_domains(
    dns_port: DnsResolver, domains: Iterable[str], *, concurrency: int = LOOKUP_CONCURRENCY
) -> dict[str, DomainInfo]:
    """One MX lookup per distinct domain, `concurrency` at a time; no database.

    Keys are the domains lower-cased without a trailing dot. Consumer domains are answered without DNS.
    A lookup that raises a DNS error (timeout, SERVFAIL, no server reachable) gives `LOOKUP_FAILED`; the
    failures are logged together as one `mx_lookup_failed` warning. Any other exception propagates (a bug,
    not an answer), cancelling the lookups still running."""
    wanted = {d for d in (clean_domain(x) for x in domains) if d}
    out: dict[str, DomainInfo] = {}
    to_ask = []
    for domain in sorted(wanted):
        known = _consumer_info(domain)
        if known is not None:
            out[domain] = known
        else:
            to_ask.append(domain)
    if not to_ask:
        return out
    gate = asyncio.Semaphore(max(1, concurrency))
    failures: dict[str, str] = {}

    async def one(domain: str) -> None:
        async with gate:
            try:
                answer = await dns_port.lookup_answer(domain, "MX")
            except (dns.exception.DNSException, OSError) as exc:
                failures[domain] = f"{type(exc).__name__}: {exc}"
                out[domain] = LOOKUP_FAILED
                return
        out[domain] = DomainInfo.from_answers(answer.records, answer.ttl_s)

    async with asyncio.TaskGroup() as group:
        for domain in to_ask:
            group.create_task(one(domain))
    if failures:
        sample = sorted(failures)[:5]
        _log.warning(
            "mx_lookup_failed",
            failed=len(failures),
            asked=len(to_ask),
            sample={d: failures[d] for d in sample},
        )
    return out


async def store_domains(ctx: SystemContext, infos: Mapping[str, DomainInfo]) -> int:
    """Upsert the definite answers among `infos` into `domain_cache` (failed lookups and consumer domains are
    not stored); returns how many rows were written."""
    rows = [
        {
            "domain": d,
            "esp": i.esp,
            "mx_host": i.mx_host,
            "has_mx": i.has_mx,
            "checked_at": ctx.now,
            "expires_at": ctx.now + cache_lifetime(i),
        }
        for d, i in sorted(infos.items())
        if d and not i.lookup_failed and consumer_esp(d) is None
    ]
    for start in range(0, len(rows), _CHUNK):
        await ctx.conn.execute(_upsert_cache(ctx, rows[start : start + _CHUNK]))
    return len(rows)


def _upsert_cache(ctx: SystemContext, rows: list[dict[str, Any]]) -> Any:
    """`INSERT ... ON CONFLICT (domain) DO UPDATE`, which SQLite and PostgreSQL spell the same way."""
    table = system_scope(domain_cache).table
    updated = ("esp", "mx_host", "has_mx", "checked_at", "expires_at")
    if ctx.conn.dialect.name == "postgresql":
        pg = postgresql.insert(table).values(rows)
        return pg.on_conflict_do_update(
            index_elements=[table.c.domain], set_={c: pg.excluded[c] for c in updated}
        )
    lite = sqlite.insert(table).values(rows)
    return lite.on_conflict_do_update(
        index_elements=[table.c.domain], set_={c: lite.excluded[c] for c in updated}
    )


async def _cached(
    ctx: SystemContext, domains: set[str], *, trust_negative: bool = True
) -> dict[str, DomainInfo]:
    """Unexpired `domain_cache` answers for `domains` (see `cache_lifetime`); only those with mail servers
    unless `trust_negative`."""
    cache = system_scope(domain_cache)
    found: dict[str, DomainInfo] = {}
    ordered = sorted(domains)
    for start in range(0, len(ordered), _CHUNK):
        chunk = ordered[start : start + _CHUNK]
        result = await ctx.conn.execute(cache.select().where(cache.c.domain.in_(chunk)))
        for row in result:
            if row.expires_at <= ctx.now or not (row.has_mx or trust_negative):
                continue
            esp = cast(Esp, row.esp if row.esp in ESPS else "unknown")
            found[row.domain] = DomainInfo(esp=esp, mx_host=row.mx_host, has_mx=bool(row.has_mx))
    return found


async def _domain_infos(
    ctx: SystemContext, domains: Iterable[str], resolved: Mapping[str, DomainInfo] | None = None
) -> dict[str, DomainInfo]:
    """Every domain answered once: consumer table, then `resolved` (answers the caller already has), then the
    cache, then DNS for the rest (stored in the cache). Keys are the cleaned domains."""
    out: dict[str, DomainInfo] = {}
    rest: set[str] = set()
    for domain in {clean_domain(d) for d in domains}:
        known = _NO_DOMAIN if not domain else _consumer_info(domain) or (resolved or {}).get(domain)
        if known is not None:
            out[domain] = known
        else:
            rest.add(domain)
    if rest:
        cached = await _cached(ctx, rest)
        out.update(cached)
        missing = rest - cached.keys()
        if missing:
            looked_up = await resolve_domains(_require_dns(ctx), missing)
            await store_domains(ctx, looked_up)
            out.update(looked_up)
    return out


async def known_domains(
    ctx: SystemContext, domains: list[str], *, trust_negative: bool = True
) -> dict[str, DomainInfo]:
    """Read-only: what is known without DNS about `domains` (keys cleaned with `clean_domain`): consumer
    domains, and unexpired cache entries (those saying "no mail servers" only when `trust_negative`). The
    caller looks the rest up outside any transaction (`resolve_domains`) and stores them (`store_domains`)."""
    out: dict[str, DomainInfo] = {}
    rest: set[str] = set()
    for domain in {clean_domain(d) for d in domains}:
        known = _NO_DOMAIN if not domain else _consumer_info(domain)
        if known is not None:
            out[domain] = known
        else:
            rest.add(domain)
    if rest:
        out.update(await _cached(ctx, rest, trust_negative=trust_negative))
    return out


async def mx_for_domains(ctx: SystemContext, domains: list[str]) -> dict[str, DomainInfo]:
    """Mail-server facts for `domains`, keyed by each domain exactly as given.

    Uses the same cache as enrichment and looks up (once each, concurrently) only the domains without a fresh
    answer, storing the definite ones. A domain whose lookup failed comes back with `lookup_failed` True;
    callers should treat it as "could not tell", not as "no mail server"."""
    infos = await _domain_infos(ctx, domains)
    return {d: infos[clean_domain(d)] for d in domains}


# --- leads ------------------------------------------------------------------------------------------------


def _pending(limit: int, workspace_id: str | None) -> Any:
    table = system_scope(leads)
    stmt = table.select(
        leads.c.id,
        leads.c.domain,
        leads.c.country,
        leads.c.country_source,
        leads.c.timezone,
        leads.c.phone,
        leads.c.website,
        leads.c.esp,
        leads.c.mx_host,
    ).where(leads.c.enriched_at.is_(None))
    if workspace_id is not None:
        stmt = stmt.where(leads.c.workspace_id == workspace_id)
    return stmt.limit(limit)


async def domains_to_resolve(
    ctx: SystemContext, *, limit: int = BATCH, workspace_id: str | None = None
) -> list[str]:
    """Read-only: the domains of the next `limit` pending leads that need a DNS lookup (not a consumer domain,
    no fresh cache entry). The worker looks these up before `enrich_pending` opens its write transaction."""
    rows = (await ctx.conn.execute(_pending(limit, workspace_id))).all()
    domains = {clean_domain(r.domain) for r in rows}
    domains = {d for d in domains if d and consumer_esp(d) is None}
    return sorted(domains - (await _cached(ctx, domains)).keys())


def _lead_values(row: Any, info: DomainInfo) -> dict[str, Any]:
    """The enrichment columns for one lead, as bind values of the batch update.

    Country: a country with no `country_source` was given by the user and is only re-spelled (`de` ->
    `DE`); otherwise (empty, or inferred earlier) it is inferred afresh. Timezone: a given one is only
    re-spelled when recognised (`europe/berlin` -> `Europe/Berlin`) and otherwise kept as typed; an empty
    one is inferred. A failed DNS lookup keeps the provider and mail server the lead already had."""
    if row.country is not None and row.country_source is None:
        country, source = normalize_country(row.country) or row.country, None
    else:
        country, source = infer_country(
            timezone=row.timezone,
            phone=row.phone,
            email_domain=row.domain,
            website=row.website,
            explicit_country=None,
        )
    if row.timezone is None:
        tz = infer_timezone(country, row.phone)
    else:
        tz = normalize_timezone(row.timezone) or row.timezone
    esp, mx_host = (row.esp, row.mx_host) if info.lookup_failed else (info.esp, info.mx_host)
    return {
        "b_id": row.id,
        "b_esp": esp,
        "b_mx_host": mx_host,
        "b_country": country,
        "b_country_source": source,
        "b_timezone": tz,
    }


async def enrich_pending(
    ctx: SystemContext,
    *,
    limit: int = BATCH,
    workspace_id: str | None = None,
    resolved: Mapping[str, DomainInfo] | None = None,
) -> int:
    """Enrich up to `limit` leads waiting for it (`enriched_at` null), then finish the imports that are done.

    Leads are grouped by domain and each distinct domain is resolved once (see the module docstring);
    `resolved` carries answers the caller already looked up, failures included, so they are not asked again.
    Each lead gets `esp`, `mxHost`, country, `countrySource` and timezone where they can be derived, and
    `enriched_at` = now. `workspace_id` restricts the work to one workspace (the worker passes none).
    On PostgreSQL the batch is claimed with `FOR UPDATE SKIP LOCKED`, so several workers share the work.
    Returns the number of leads enriched plus the number of imports finished."""
    stmt = _pending(limit, workspace_id).with_for_update(skip_locked=True)
    rows = (await ctx.conn.execute(stmt)).all()
    if rows:
        infos = await _domain_infos(ctx, (r.domain for r in rows), resolved)
        table = system_scope(leads)
        update = (
            table.update()
            .where(leads.c.id == bindparam("b_id"), leads.c.enriched_at.is_(None))
            .values(
                esp=bindparam("b_esp"),
                mx_host=bindparam("b_mx_host"),
                country=bindparam("b_country"),
                country_source=bindparam("b_country_source"),
                timezone=bindparam("b_timezone"),
                enriched_at=ctx.now,
            )
        )
        await ctx.conn.execute(update, [_lead_values(r, infos[clean_domain(r.domain)]) for r in rows])
    finished = await finish_imports(ctx, workspace_id=workspace_id)
    return len(rows) + finished


async def index_search(ctx: SystemContext, *, limit: int = SEARCH_BATCH) -> int:
    """Put up to `limit` leads into the search index (`search_index` = `search_text`); returns how many.
    A text over `SEARCH_INDEX_MAX_BYTES` stays out of it (see leads/rules.py).

    Imports leave `search_index` NULL so that a chunk pays no trigram indexing (the most expensive part of an
    insert on both engines); until a lead is indexed, search finds it with LIKE over the pending rows. The
    batch is small because on SQLite it holds the write lock (FTS5 trigram indexing runs at roughly 10,000
    rows/s). On PostgreSQL the batch is claimed with `FOR UPDATE SKIP LOCKED`."""
    table = system_scope(leads)
    pending = (
        table.select(leads.c.id)
        .where(leads.c.search_index.is_(None), byte_length(leads.c.search_text) <= SEARCH_INDEX_MAX_BYTES)
        .limit(limit)
    )
    if ctx.conn.dialect.name == "postgresql":
        pending = pending.with_for_update(skip_locked=True)
    result = await ctx.conn.execute(
        table.update()
        .where(leads.c.id.in_(pending.scalar_subquery()), leads.c.search_index.is_(None))
        .values(search_index=leads.c.search_text)
    )
    return int(result.rowcount)


# --- imports ----------------------------------------------------------------------------------------------


async def finish_imports(ctx: SystemContext, *, workspace_id: str | None = None) -> int:
    """Move imports in `enriching` forward; returns how many became `done`.

    - When none of an import's leads waits for enrichment any more, its `enriched_at` is set.
    - An enriched import becomes `done` (`finished_at` = now) when it was not asked to verify, or when none of
      its leads is still `verifying`. The verification worker calls this too, after each batch.
    Only imports whose final chunk has arrived are `enriching`; earlier states are left alone."""
    imports = system_scope(lead_imports)
    lead_rows = system_scope(leads)
    same_import = (
        leads.c.workspace_id == lead_imports.c.workspace_id,
        leads.c.import_id == lead_imports.c.id,
    )
    waiting = lead_rows.select(leads.c.id).where(leads.c.enriched_at.is_(None), *same_import).exists()
    verifying = (
        lead_rows.select(leads.c.id).where(leads.c.verify_status == "verifying", *same_import).exists()
    )
    scope = [lead_imports.c.status == "enriching"]
    if workspace_id is not None:
        scope.append(lead_imports.c.workspace_id == workspace_id)
    await ctx.conn.execute(
        imports.update()
        .where(*scope, lead_imports.c.enriched_at.is_(None), not_(waiting))
        .values(enriched_at=ctx.now)
    )
    done = await ctx.conn.execute(
        imports.update()
        .where(
            *scope,
            lead_imports.c.enriched_at.is_not(None),
            or_(not_(lead_imports.c.verify), not_(verifying)),
        )
        .values(status="done", finished_at=ctx.now)
    )
    finished = int(done.rowcount or 0)
    if finished:
        await refresh_lead_statistics(ctx.conn)
    return finished
