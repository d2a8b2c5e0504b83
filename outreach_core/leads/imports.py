"""Chunked lead import: `POST /leads/import`, `GET /leads/imports`, `GET /leads/imports/{id}`.

Counters are exact, and `rows = created + updated + skipped + duplicates + suppressed + invalid` holds at
every point:
- `rows`: rows received, plus the rows the client dropped itself (`clientInvalid`, `clientDuplicates`);
- `invalid`: rows without a usable address, plus `clientInvalid`;
- `duplicates`: rows whose address already appeared earlier in this import (same or earlier chunk), plus
  `clientDuplicates`;
- `suppressed`: address or domain on the suppression list (not stored);
- `skipped` / `updated`: the address was already a lead of the workspace (`existing` skip / update);
- `created`: new leads;
- `undeliverable`: later, leads of this import that verification found invalid.

A chunk is identified by the SHA-256 of its content: sending the same chunk again (a client retry) changes
nothing and returns the import as it is.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import bindparam, case, func, null

from outreach_core.billing.operations import require_active_plan
from outreach_core.bulk import one_of
from outreach_core.context import WorkspaceContext, insert_rows, scoped
from outreach_core.db.tables import import_chunks, import_seen, lead_imports, leads, lists
from outreach_core.enrichment.rules import normalize_country
from outreach_core.errors import InvalidState, NotFound, PayloadTooLarge
from outreach_core.ids import new_id, new_ids
from outreach_core.leads.operations import ensure_contacts_room
from outreach_core.leads.rules import (
    ENRICHMENT_INPUTS,
    derived_columns,
    normalize_email,
    search_text,
    sort_name,
)
from outreach_core.leads.schemas import MAX_IMPORT_ROWS, ImportIn, ImportRow, LeadImport, LeadImports
from outreach_core.lists.operations import add_to_list, resolve_import_list
from outreach_core.suppressions.operations import suppressed_emails

_FIELDS = (
    "first_name",
    "last_name",
    "company",
    "title",
    "website",
    "phone",
    "linkedin",
    "country",
    "timezone",
)
_COUNTERS = ("rows", "created", "updated", "skipped", "duplicates", "suppressed", "invalid")


async def import_leads(ctx: WorkspaceContext, body: ImportIn) -> LeadImport:
    """Import leads in chunks of up to 5,000 rows. Omit `importId` on the first call and pass the returned id
    on every later chunk; set `final: true` on the last one. Addresses are normalised and deduplicated within
    the import, suppressed ones are skipped, invalid ones counted, and leads already in the workspace are
    skipped or updated (`existing`). `list` puts every imported lead on an existing list (`{id}`) or a new
    one (`{name}`). After the final chunk, email providers and countries are filled in (and addresses
    verified when `verify` is true) in the background; poll `get_import` until `status` is `done`."""
    if len(body.rows) > MAX_IMPORT_ROWS:
        raise PayloadTooLarge(
            f"At most {MAX_IMPORT_ROWS:,} rows per call; split the file into chunks.",
            {"rows": len(body.rows), "limit": MAX_IMPORT_ROWS},
        )
    await require_active_plan(ctx)
    imp = await _open_import(ctx, body)
    chunk_hash = _chunk_hash(body)
    chunks = scoped(ctx, import_chunks)
    seen_chunk = (
        await ctx.conn.execute(
            chunks.select(import_chunks.c.chunk_hash).where(
                import_chunks.c.import_id == imp.id, import_chunks.c.chunk_hash == chunk_hash
            )
        )
    ).first()
    if seen_chunk is not None:
        return await get_import(ctx, imp.id)
    if imp.status != "importing":
        raise InvalidState(
            "This import is already complete; start a new one without importId.",
            {"importId": imp.id, "status": imp.status},
        )
    await ctx.conn.execute(
        chunks.insert({"import_id": imp.id, "chunk_hash": chunk_hash, "created_at": ctx.now})
    )
    counts = await _import_rows(ctx, imp, body.rows)
    counts["rows"] += body.client_invalid + body.client_duplicates
    counts["invalid"] += body.client_invalid
    counts["duplicates"] += body.client_duplicates
    values: dict[str, Any] = {name: getattr(lead_imports.c, name) + counts[name] for name in _COUNTERS}
    if body.final:
        values["status"] = "enriching"
        await ctx.conn.execute(scoped(ctx, import_seen).delete().where(import_seen.c.import_id == imp.id))
    await ctx.conn.execute(
        scoped(ctx, lead_imports).update().where(lead_imports.c.id == imp.id).values(**values)
    )
    return await get_import(ctx, imp.id)


async def get_import(ctx: WorkspaceContext, id: str) -> LeadImport:
    """An import with its counters and status (importing → enriching → done)."""
    rows = await _imports(ctx, lead_imports.c.id == id)
    if not rows:
        raise NotFound("import", id)
    return rows[0]


async def list_imports(ctx: WorkspaceContext) -> LeadImports:
    """The workspace's imports, newest first (the last 100)."""
    return LeadImports(imports=await _imports(ctx, None, limit=100))


# --- the work of one chunk ---------------------------------------------------------------------------------


async def _import_rows(ctx: WorkspaceContext, imp: Any, rows: list[ImportRow]) -> dict[str, int]:
    counts = dict.fromkeys(_COUNTERS, 0)
    counts["rows"] = len(rows)
    unique: dict[str, tuple[str, ImportRow]] = {}
    for row in rows:
        normalized = normalize_email(row.email)
        if normalized is None:
            counts["invalid"] += 1
        elif normalized[0] in unique:
            counts["duplicates"] += 1
        else:
            unique[normalized[0]] = (normalized[1], row)
    if not unique:
        return counts

    emails = list(unique)
    seen = scoped(ctx, import_seen)
    earlier = set(
        (
            await ctx.conn.execute(
                seen.select(import_seen.c.email).where(
                    import_seen.c.import_id == imp.id, one_of(ctx, import_seen.c.email, emails)
                )
            )
        ).scalars()
    )
    counts["duplicates"] += len(earlier)
    fresh = [e for e in emails if e not in earlier]
    if fresh:
        await insert_rows(ctx, import_seen, [{"import_id": imp.id, "email": e} for e in fresh])

    suppressed = await suppressed_emails(ctx, [(e, unique[e][0]) for e in fresh])
    counts["suppressed"] = len(suppressed)
    candidates = [e for e in fresh if e not in suppressed]

    lead_table = scoped(ctx, leads)
    existing = (
        {
            r.email: r.id
            for r in (
                await ctx.conn.execute(
                    lead_table.select(leads.c.id, leads.c.email).where(one_of(ctx, leads.c.email, candidates))
                )
            ).all()
        }
        if candidates
        else {}
    )
    new = [e for e in candidates if e not in existing]
    await ensure_contacts_room(ctx, len(new))

    if existing:
        if imp.existing == "update":
            counts["updated"] = await _update_existing(ctx, existing, unique)
        else:
            counts["skipped"] = len(existing)
    if new:
        ids = new_ids("lead", len(new))
        created = [_new_lead(ctx, imp, lead_id, e, *unique[e]) for lead_id, e in zip(ids, new, strict=True)]
        await insert_rows(ctx, leads, created)
        counts["created"] = len(new)
    if imp.list_id is not None and (new or existing):
        members = lead_table.select(leads.c.id).where(one_of(ctx, leads.c.email, new + list(existing)))
        await add_to_list(ctx, imp.list_id, members)
    return counts


def _new_lead(
    ctx: WorkspaceContext, imp: Any, lead_id: str, email: str, domain: str, row: ImportRow
) -> dict[str, Any]:
    first, last, company = _clean(row.first_name), _clean(row.last_name), _clean(row.company)
    return {
        "id": lead_id,
        "email": email,
        "domain": domain,
        "first_name": first,
        "last_name": last,
        "company": company,
        "title": _clean(row.title),
        "website": _clean(row.website),
        "phone": _clean(row.phone),
        "linkedin": _clean(row.linkedin),
        # unrecognised countries are dropped, not stored
        "country": normalize_country(_clean(row.country)) if row.country else None,
        "timezone": _clean(row.timezone),
        "custom": row.custom or {},
        "sort_name": sort_name(first, last),
        "search_text": search_text(email, first, last, company),
        "verify_status": "verifying" if imp.verify else "unknown",
        "verify_api": bool(imp.verify and ctx.settings.verifier_url),
        "import_id": imp.id,
        "created_at": ctx.now,
        "updated_at": None,
    }


async def _update_existing(
    ctx: WorkspaceContext, existing: dict[str, str], unique: dict[str, tuple[str, ImportRow]]
) -> int:
    """`existing: update`: fill in the values the file has (empty cells leave a field as it is).

    One executemany UPDATE with uniform parameters: each field is `COALESCE(:new, current)`."""
    lead_table = scoped(ctx, leads)
    current = {
        r.id: r
        for r in (
            await ctx.conn.execute(lead_table.select().where(leads.c.id.in_(list(existing.values()))))
        ).all()
    }
    params = []
    for email, lead_id in existing.items():
        row, now = unique[email][1], current[lead_id]
        new = {name: _clean(getattr(row, name)) for name in _FIELDS}
        new["country"] = normalize_country(new["country"])
        merged = {name: new[name] if new[name] is not None else getattr(now, name) for name in _FIELDS}
        derived = derived_columns(email, merged["first_name"], merged["last_name"], merged["company"])
        params.append(
            {
                "lead_id": lead_id,
                **{f"new_{name}": value for name, value in new.items()},
                "new_custom": {**(now.custom or {}), **(row.custom or {})},
                **{f"new_{name}": value for name, value in derived.items()},
                "reset_enrichment": any(new[n] is not None for n in ENRICHMENT_INPUTS),
            }
        )
    stmt = (
        lead_table.update()
        .where(leads.c.id == bindparam("lead_id"))
        .values(
            **{name: func.coalesce(bindparam(f"new_{name}"), getattr(leads.c, name)) for name in _FIELDS},
            custom=bindparam("new_custom", type_=leads.c.custom.type),
            sort_name=bindparam("new_sort_name"),
            search_text=bindparam("new_search_text"),
            # an indexed lead is re-indexed now; a pending one stays pending (search_index NULL)
            search_index=case((leads.c.search_index.is_(None), null()), else_=bindparam("new_search_text")),
            enriched_at=case((bindparam("reset_enrichment"), null()), else_=leads.c.enriched_at),
            country_source=case(
                (bindparam("new_country").is_not(None), null()), else_=leads.c.country_source
            ),
            updated_at=ctx.now,
        )
    )
    await ctx.conn.execute(stmt, params)
    return len(params)


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    stripped = value.strip()
    return stripped or None


# --- import rows -------------------------------------------------------------------------------------------


async def _open_import(ctx: WorkspaceContext, body: ImportIn) -> Any:
    table = scoped(ctx, lead_imports)
    if body.import_id is not None:
        row = (
            await ctx.conn.execute(table.select().where(lead_imports.c.id == body.import_id))
        ).one_or_none()
        if row is None:
            raise NotFound("import", body.import_id)
        return row
    list_id = None
    if body.target_list is not None:
        list_id, _ = await resolve_import_list(ctx, body.target_list.id, body.target_list.name)
    import_id = new_id("imp")
    await ctx.conn.execute(
        table.insert(
            {
                "id": import_id,
                "file_name": body.file_name,
                "list_id": list_id,
                "status": "importing",
                "verify": body.verify,
                "existing": body.existing,
                "created_at": ctx.now,
            }
        )
    )
    return (await ctx.conn.execute(table.select().where(lead_imports.c.id == import_id))).one()


def _chunk_hash(body: ImportIn) -> str:
    content = body.model_dump(mode="json", exclude={"import_id"}, by_alias=True)
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


async def _imports(ctx: WorkspaceContext, where: Any, *, limit: int | None = None) -> list[LeadImport]:
    table = scoped(ctx, lead_imports)
    stmt = table.select(lead_imports, lists.c.name.label("list_name")).outerjoin(
        lists, lists.c.id == lead_imports.c.list_id
    )
    if where is not None:
        stmt = stmt.where(where)
    stmt = stmt.order_by(lead_imports.c.created_at.desc(), lead_imports.c.id.desc())
    if limit is not None:
        stmt = stmt.limit(limit)
    return [
        LeadImport(
            id=r.id,
            file_name=r.file_name,
            list_id=r.list_id,
            list_name=r.list_name,
            status=r.status,
            verify=r.verify,
            rows=r.rows,
            created=r.created,
            updated=r.updated,
            skipped=r.skipped,
            duplicates=r.duplicates,
            suppressed=r.suppressed,
            invalid=r.invalid,
            undeliverable=r.undeliverable,
            created_at=r.created_at,
            finished_at=r.finished_at,
            enriched_at=r.enriched_at,
        )
        for r in (await ctx.conn.execute(stmt)).all()
    ]


__all__ = ["get_import", "import_leads", "list_imports"]
