"""The enrichment pipeline: email provider and mail server per domain, country and timezone per lead, the
search index, and moving finished imports on.

System work (no caller): the `enrich` and `search-index` workers run it across every workspace. The domain
facts come from the cache every lead domain shares (`outreach_core.targets.mail_domains`); the rules are in
`rules.py`; docs/enrichment.md describes the behaviour for users and operators. Leads are written in one
statement per batch (`bulk.update_each`: `UPDATE ... FROM unnest(...)` on PostgreSQL, so the lead
counters' trigger runs once per batch; an executemany on SQLite), never one statement per lead, and a value
the user gave (country, timezone) is never replaced by an inferred one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import func, literal
from sqlalchemy.dialects import postgresql, sqlite

from outreach_core.enrichment.rules import infer_country, infer_timezone
from outreach_core.kernel.bulk import byte_length, listed, one_of, update_each
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import domain_lookups_wanted, lead_search, lead_search_pending, leads
from outreach_core.kernel.db.types import UtcDateTime
from outreach_core.kernel.geo import normalize_country, normalize_timezone
from outreach_core.targets.esp import consumer_esp
from outreach_core.targets.import_progress import finish_imports, import_parts_queued
from outreach_core.targets.list_sizes import fold_count_deltas
from outreach_core.targets.mail_domains import (
    DomainInfo,
    cache_lifetime,
    cached_domains,
    clean_domain,
    domain_infos,
    known_domains,
    resolve_domains,
    store_domains,
)
from outreach_core.targets.rules import SEARCH_INDEX_MAX_BYTES
from outreach_core.targets.schemas import CountrySource

if TYPE_CHECKING:
    from outreach_core.kernel.endpoint import Background

BATCH = 5_000
"""Leads taken per `enrich_pending` call by default (one import chunk)."""
SEARCH_BATCH = 2_000
POSTGRESQL_SEARCH_BATCH = 10_000
"""Leads moved into `lead_search` per transaction (PostgreSQL: no single write lock to hold short)."""
DOMAIN_BATCH = 2_000
"""Domains looked up per tick while an import is being stored (`resolve_waiting_domains`)."""
_NO_TIME = timedelta(0)

_log = structlog.get_logger(__name__)


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
    return sorted(domains - (await cached_domains(ctx, domains)).keys())


def _lead_values(row: Any, info: DomainInfo) -> dict[str, Any]:
    """The enrichment columns for one lead (by column name, with its `id`), a row of the batch update.

    Country: a country with no `country_source` was given by the user and is only re-spelled (`de` ->
    `DE`); otherwise (empty, or inferred earlier) it is inferred afresh. Timezone: a given one is only
    re-spelled when recognised (`europe/berlin` -> `Europe/Berlin`) and otherwise kept as typed; an empty
    one is inferred. A failed DNS lookup keeps the provider and mail server the lead already had."""
    country, source, tz = _place(
        row.domain, row.country, row.country_source, row.timezone, row.phone, row.website
    )
    esp, mx_host = (row.esp, row.mx_host) if info.lookup_failed else (info.esp, info.mx_host)
    return {
        "id": row.id,
        "esp": esp,
        "mx_host": mx_host,
        "country": country,
        "country_source": source,
        "timezone": tz,
    }


@lru_cache(maxsize=65_536)
def _place(
    domain: str,
    country: str | None,
    country_source: str | None,
    timezone: str | None,
    phone: str | None,
    website: str | None,
) -> tuple[str | None, CountrySource | None, str | None]:
    """Country, its source and timezone from a lead's facts (see `_lead_values`). Pure, so remembered:
    an import's leads share few combinations of domain, phone and the rest (an import of 200,000 leads at
    10,000 company domains: about 20,000), and working one out costs tens of microseconds (phone
    numbers, the public-suffix list)."""
    found: str | None
    source: CountrySource | None
    if country is not None and country_source is None:
        found, source = normalize_country(country) or country, None
    else:
        found, source = infer_country(
            timezone=timezone, phone=phone, email_domain=domain, website=website, explicit_country=None
        )
    if timezone is None:
        return found, source, infer_timezone(found, phone)
    return found, source, normalize_timezone(timezone) or timezone


async def enrich_new_leads(ctx: SystemContext, rows: list[dict[str, Any]]) -> int:
    """Enrich leads about to be inserted (`leads` rows as dicts, with `domain`, `country`, `timezone`,
    `phone`, `website`) whose domain is known without DNS: a consumer provider, or an unexpired entry of the
    domain cache. Their enrichment columns and `enriched_at` are set in place, so the import writes each such
    lead once instead of inserting it and updating it again (on PostgreSQL an update of every index of the
    row, both trigram indexes included). The others get the same keys, left for the `enrich` worker
    (`enriched_at` None). Returns how many were enriched."""
    if not rows:
        return 0
    infos = await known_domains(ctx, sorted({str(row["domain"] or "") for row in rows}))
    enriched = 0
    unknown: list[str] = []
    for row in rows:
        domain = clean_domain(row["domain"] or "")
        info = infos.get(domain)
        if info is None:
            row.update(esp="unknown", mx_host=None, country_source=None, enriched_at=None)
            if domain:
                unknown.append(domain)
            continue
        values = _lead_values(_Pending(row), info)
        del values["id"]
        row.update(values, enriched_at=ctx.now)
        enriched += 1
    await _note_unknown_domains(ctx, unknown)
    return enriched


class _Pending:
    """A new lead's dict seen as the pending row `_lead_values` reads (nothing enriched yet)."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.id = row["id"]
        self.domain = row["domain"]
        self.country = row["country"]
        self.country_source = None
        self.timezone = row["timezone"]
        self.phone = row["phone"]
        self.website = row["website"]
        self.esp = "unknown"
        self.mx_host = None


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
        infos = await domain_infos(ctx, (r.domain for r in rows), resolved)
        update = system_scope(leads).update().values(enriched_at=ctx.now)
        await update_each(
            ctx,
            update,
            [_lead_values(r, infos[clean_domain(r.domain)]) for r in rows],
            where=lambda _: [leads.c.enriched_at.is_(None)],
        )
    finished = await finish_imports(ctx, workspace_id=workspace_id)
    return len(rows) + finished


async def index_search_batch(runtime: Background) -> int:
    """What the `search-index` worker runs: one batch of `index_search`, unless an import has parts queued
    (storing comes first; until indexed, search finds the stored leads through `ix_leads_search_pending`)."""
    if await runtime.system_read(import_parts_queued):
        return 0
    return await runtime.system(index_search)


async def _index_stored_leads(ctx: SystemContext, *, limit: int) -> int:
    """PostgreSQL: move up to `limit` leads from `lead_search_pending` into `lead_search` (their GIN
    indexes), in one statement; a lead deleted meanwhile, or whose text stays out of the index, is just
    dropped from the list. Several workers share the list (`FOR UPDATE SKIP LOCKED`)."""
    batch = (
        system_scope(lead_search_pending)
        .select(lead_search_pending.c.lead_id)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    taken = (
        system_scope(lead_search_pending)
        .delete()
        .where(lead_search_pending.c.lead_id.in_(batch))
        .returning(lead_search_pending.c.lead_id)
        .cte("taken")
    )
    source = (
        system_scope(leads)
        .select(leads.c.id, leads.c.workspace_id, leads.c.search_index)
        .join(taken, taken.c.lead_id == leads.c.id)
        .where(leads.c.search_index.is_not(None))
    )
    statement = (
        postgresql.insert(system_scope(lead_search).table)
        .from_select(["lead_id", "workspace_id", "text"], source)
        .on_conflict_do_nothing(index_elements=[lead_search.c.lead_id])
    )
    moved = await ctx.conn.execute(statement.add_cte(taken))
    if moved.rowcount:
        return int(moved.rowcount)
    # nothing inserted: the batch may still have held deleted leads only
    waiting = system_scope(lead_search_pending).select(lead_search_pending.c.lead_id).limit(1)
    return 1 if (await ctx.conn.execute(waiting)).first() is not None else 0


async def index_search(ctx: SystemContext, *, limit: int = SEARCH_BATCH) -> int:
    """Put up to `limit` leads into the search index (`search_index` = `search_text`); returns how many.
    A text over `SEARCH_INDEX_MAX_BYTES` stays out of it (see leads/rules.py).

    Imports leave `search_index` NULL so that a chunk pays no trigram indexing (the most expensive part of an
    insert on both engines); until a lead is indexed, search finds it with LIKE over the pending rows. The
    batch is small because on SQLite it holds the write lock (FTS5 trigram indexing runs at roughly 10,000
    rows/s). On PostgreSQL the batch is claimed with `FOR UPDATE SKIP LOCKED`."""
    if ctx.conn.dialect.name == "postgresql":
        moved = await _index_stored_leads(ctx, limit=POSTGRESQL_SEARCH_BATCH)
        if moved:
            return moved
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


# --- mail domains while an import is being stored ------------------------------------------------------

MAX_NOTED_DOMAINS = 100_000
"""Rows `domain_lookups_wanted` holds at most (a merge finding it this full notes nothing); past it, new
domains are left to the `enrich` worker after storing. Domains still noted when storing ends are taken at
the next import's storing, and dropped then if the worker cached them meanwhile."""
_DOMAIN_CHARS = 253
"""The longest domain the table keeps (DNS's own limit; a longer one is never looked up)."""


async def _note_unknown_domains(ctx: SystemContext, domains: list[str]) -> None:
    """Called by the merge (`enrich_new_leads`), in its transaction, for the domains of the leads it stores
    pending: one `INSERT ... SELECT ... ON CONFLICT DO NOTHING` of the part's distinct domains (one parameter
    for all of them), into a table because the merge and the `enrich` worker run in different processes
    under `outreach serve`. A rolled-back merge notes nothing; the part is merged again, and notes them
    then."""
    distinct = sorted({d for d in domains if len(d) <= _DOMAIN_CHARS})  # one order: no deadlock on PostgreSQL
    if not distinct:
        return
    wanted = system_scope(domain_lookups_wanted).table
    values = listed(ctx, distinct)
    insert: Any = postgresql.insert if ctx.conn.dialect.name == "postgresql" else sqlite.insert
    noted = system_scope(domain_lookups_wanted).select(func.count()).select_from(wanted)
    room = noted.scalar_subquery() < MAX_NOTED_DOMAINS
    source = values.select().with_only_columns(values.c.value, literal(ctx.now, UtcDateTime)).where(room)
    await ctx.conn.execute(
        insert(wanted).from_select(["domain", "noted_at"], source).on_conflict_do_nothing()
    )


async def noted_domains(ctx: SystemContext, *, limit: int = DOMAIN_BATCH) -> tuple[list[str], list[str]]:
    """Read-only: up to `limit` of the domains the merges noted (`_note_unknown_domains`), first noted first,
    and those of them still to look up (not cached meanwhile, by the worker after an earlier import or by
    another process)."""
    table = system_scope(domain_lookups_wanted)
    rows = await ctx.conn.execute(
        table.select(domain_lookups_wanted.c.domain)
        .order_by(domain_lookups_wanted.c.noted_at, domain_lookups_wanted.c.domain)
        .limit(limit)
    )
    taken = [str(d) for d in rows.scalars()]
    if not taken:
        return [], []
    return taken, sorted(set(taken) - (await cached_domains(ctx, set(taken))).keys())


async def _store_looked_up(ctx: SystemContext, infos: Mapping[str, DomainInfo], taken: list[str]) -> int:
    """The definite answers upserted into `domain_cache` (`store_domains`), and the `taken` domains, looked
    up, deleted from `domain_lookups_wanted`."""
    stored = await store_domains(ctx, infos)
    table = system_scope(domain_lookups_wanted)
    await ctx.conn.execute(table.delete().where(one_of(ctx, domain_lookups_wanted.c.domain, taken)))
    return stored


async def resolve_waiting_domains(runtime: Background) -> int:
    """While an import is being stored: look up the mail domains its merges met without a cache entry, and
    store the answers in `domain_cache`; returns how many noted domains it took (looked up, or dropped as
    cached meanwhile).

    No lead is written (storing comes first, issue 31: the merge alone writes leads meanwhile); a lookup
    needs no transaction, and the answers and the removal of the domains taken are one short transaction.
    The parts still queued then find those domains in the cache and store their leads already enriched
    (`enrich_new_leads`), instead of leaving them to the `enrich` worker to update one by one after the
    import is stored: an import's leads share their company domains (the first tens of thousands of rows of
    a large file usually bring most of them). The domains come from the merges themselves
    (`domain_lookups_wanted`), first noted first looked up, so a tick costs its own domains and nothing
    more: no scan of the leads waiting for enrichment, which are most of a large import's while it is
    stored. Each noted domain is looked up once; one whose lookup failed (or that DNS says not to cache) is
    noted again by the next part that meets it, and otherwise waits for the worker after storing. Every
    domain taken leaves the table, so the ticks drain it and then sleep."""
    dns = runtime.ports.dns
    if dns is None:
        return 0
    taken, domains = await runtime.system_read(noted_domains, limit=DOMAIN_BATCH)
    if not taken:
        return 0
    resolved = await resolve_domains(dns, domains) if domains else {}
    # Only answers that stay in the cache are stored: a failed lookup is not, and one DNS says not to cache
    # (a negative TTL of 0) would be stored expired.
    lasting = {
        d: info for d, info in resolved.items() if not info.lookup_failed and cache_lifetime(info) > _NO_TIME
    }
    await runtime.system(_store_looked_up, lasting, taken)
    return len(taken)


# --- one batch ---------------------------------------------------------------------------------------------


async def enrich_batch(runtime: Background) -> int:
    """What the `enrich` worker runs: up to `BATCH` leads enriched, then the imports that are done moved on;
    returns leads enriched plus imports finished.

    Mail-server lookups happen before the write transaction opens: the domains of the next batch that need
    DNS are read (read-only transaction), looked up with no transaction open, and their answers stored in a
    short transaction; only then does `enrich_pending` write the leads. On SQLite, where a write transaction
    holds the database's single write lock, this keeps slow or unanswered DNS from blocking imports and
    every other writer. `enrich_pending` still looks up any domain it finds unresolved (leads added in
    between), so it is correct on its own.

    While an import is being stored it writes no lead and runs `resolve_waiting_domains` instead (returns
    the domains it stored)."""
    if await runtime.system_read(import_parts_queued):
        # storing comes first: the leads are enriched once every queued part is merged; their domains are
        # looked up meanwhile, so that the parts still queued store their leads enriched
        return await resolve_waiting_domains(runtime)
    resolved: dict[str, DomainInfo] = {}
    if runtime.ports.dns is not None:
        domains = await runtime.system_read(domains_to_resolve, limit=BATCH)
        if domains:
            resolved = await resolve_domains(runtime.ports.dns, domains)
            # noted while storing but looked up only now: no longer wanted either
            await runtime.system(_store_looked_up, resolved, domains)
    handled = await runtime.system(enrich_pending, limit=BATCH, resolved=resolved)
    # The lead counters' and list sizes' deltas of this batch and of everything since the last fold
    # (PostgreSQL; a fold is one short statement, an empty one an index probe or a scan of an empty table).
    # Nothing to fold on SQLite: no write transaction there, it would only wait for its turn.
    if not runtime.settings.is_sqlite:
        await runtime.system(fold_count_deltas)
    return handled
