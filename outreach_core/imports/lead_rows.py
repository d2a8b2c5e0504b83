"""A file's row as the lead the import stores: cleaned cells, the derived sort and search columns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import case, func, null

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.db.tables import leads
from outreach_core.kernel.geo import normalize_country
from outreach_core.leads.schemas import LEAD_FIELDS
from outreach_core.targets.rules import ENRICHMENT_INPUTS, derived_columns, search_index_value

Row = dict[str, Any]
"""A queued import row in storage form (`stored_row`): snake_case keys, values as validated on arrival."""


def new_lead_row(
    ctx: WorkspaceContext, imp: Any, lead_id: str, email: str, domain: str, row: Row
) -> dict[str, Any]:
    """The `leads` row an import stores for a new address (`email` normalised, `domain` its domain)."""
    fields = {name: clean_cell(row.get(name)) for name in LEAD_FIELDS}
    # unrecognised countries are dropped, not stored
    fields["country"] = normalize_country(fields["country"])
    derived = derived_columns(email, fields["first_name"], fields["last_name"], fields["company"])
    return {
        "id": lead_id,
        "email": email,
        "domain": domain,
        **fields,
        "custom": row.get("custom") or {},
        **derived,
        # PostgreSQL: written at once (the sort indexes carry it, so search pages can walk them); its GIN
        # indexes are on `lead_search`, filled by the search-index worker after storing (issue 31), while a
        # later UPDATE of `leads` would write every row a second time and, MVCC, leave the table twice its
        # size. SQLite: left to that worker, since the FTS5 trigger (~10,000 rows/s) would hold the single
        # write lock 0.5 s longer per 5,000 rows, and SQLite updates a row in place.
        "search_index": (
            search_index_value(derived["search_text"]) if ctx.conn.dialect.name == "postgresql" else None
        ),
        "verify_status": "verifying" if imp.verify else "unknown",
        "verify_api": bool(imp.verify and ctx.settings.verifier_url),
        "import_id": imp.id,
        "created_at": ctx.now,
        "updated_at": None,
    }


def clean_cell(value: str | None) -> str | None:
    """A cell as stored: stripped; empty is None (an empty cell never overwrites a value)."""
    if value is None:
        return None
    stripped = value.strip()
    return stripped or None


def updated_lead_row(email: str, row: Row, now: Any) -> dict[str, Any]:
    """What `existing: update` writes for the known lead `now` from the file's `row`: each field the file
    fills (None: the field stays as it is), the custom fields merged, the sort and search columns derived
    from the result, and whether enrichment must run again (`reset_enrichment`)."""
    new = {name: clean_cell(row.get(name)) for name in LEAD_FIELDS}
    new["country"] = normalize_country(new["country"])

    def kept(name: str) -> Any:
        return new[name] if new[name] is not None else getattr(now, name)

    derived = derived_columns(email, kept("first_name"), kept("last_name"), kept("company"))
    return {
        **new,
        "custom": {**(now.custom or {}), **(row.get("custom") or {})},
        **derived,
        "search_index": search_index_value(derived["search_text"]),
        "reset_enrichment": any(new[n] is not None for n in ENRICHMENT_INPUTS),
    }


def update_lead_values(ctx: WorkspaceContext, new: Callable[[str], Any], custom: Any) -> dict[str, Any]:
    """The SET clause of `existing: update` (both engines' statements): `new(name)` is the column carrying an
    `updated_lead_row` value; each field is `COALESCE(new, current)`."""
    return {
        **{name: func.coalesce(new(name), leads.c[name]) for name in LEAD_FIELDS},
        "custom": custom,
        "sort_name": new("sort_name"),
        "search_text": new("search_text"),
        # an indexed lead is re-indexed now; a pending one stays pending (search_index NULL)
        "search_index": case((leads.c.search_index.is_(None), null()), else_=new("search_index")),
        "enriched_at": case((new("reset_enrichment"), null()), else_=leads.c.enriched_at),
        "country_source": case((new("country").is_not(None), null()), else_=leads.c.country_source),
        "updated_at": ctx.now,
    }
