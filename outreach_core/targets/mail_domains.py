"""What DNS says about the mail domain of an address: its mail servers (MX) and email provider, looked up
over `ctx.ports.dns` and cached in `domain_cache` for every workspace. Shared by enrichment (a lead's
`esp` and `mxHost`) and verification (does the domain take mail?).

- Each distinct domain is resolved once: a well-known consumer domain (`gmail.com`) needs no DNS; otherwise
  `domain_cache` answers while fresh, else one MX lookup, at most `LOOKUP_CONCURRENCY` at a time. Definite
  answers are cached: mail servers for `CACHE_TTL`, "no mail servers" (no MX, null MX, NXDOMAIN) for the
  negative TTL DNS gave with it (RFC 2308, the SOA's), at most `NEGATIVE_CACHE_MAX`. A lookup that failed
  (timeout, server failure) is not cached, so the next lead on that domain asks again. Verification trusts
  only cached mail servers and looks "no mail servers" up again.
- Lookups run outside any transaction where the caller can (`resolve_domains`, then `store_domains` in a
  short one); `domain_infos` looks up what it must itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

import dns.exception
import structlog
from sqlalchemy.dialects import postgresql, sqlite

from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import domain_cache
from outreach_core.kernel.ports import DnsResolver
from outreach_core.targets.esp import classify_esp, consumer_esp, parse_mx
from outreach_core.targets.schemas import ESPS, Esp

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


async def cached_domains(
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


async def domain_infos(
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
        cached = await cached_domains(ctx, rest)
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
        out.update(await cached_domains(ctx, rest, trust_negative=trust_negative))
    return out


async def mx_for_domains(ctx: SystemContext, domains: list[str]) -> dict[str, DomainInfo]:
    """Mail-server facts for `domains`, keyed by each domain exactly as given.

    Uses the same cache as enrichment and looks up (once each, concurrently) only the domains without a fresh
    answer, storing the definite ones. A domain whose lookup failed comes back with `lookup_failed` True;
    callers should treat it as "could not tell", not as "no mail server"."""
    infos = await domain_infos(ctx, domains)
    return {d: infos[clean_domain(d)] for d in domains}
