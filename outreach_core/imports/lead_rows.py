"""A file's row as the lead the import stores: cleaned cells, the derived sort and search columns."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from sqlalchemy import case, cast, func, null
from sqlalchemy.dialects.postgresql import JSONB

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.db.tables import leads
from outreach_core.kernel.geo import normalize_country
from outreach_core.leads.schemas import LEAD_FIELDS
from outreach_core.targets.rules import ENRICHMENT_INPUTS, derived_columns, search_index_value

Row = dict[str, Any]
"""A queued import row in storage form (`stored_row`): snake_case keys, values as validated on arrival."""


def new_lead_rows(
    ctx: WorkspaceContext, imp: Any, new: Iterable[tuple[str, str, str, Row]]
) -> list[dict[str, Any]]:
    """The `leads` rows an import stores for new addresses, from (`lead id`, `email` normalised, `domain`
    its domain, the file's row) each. What is the same for the whole part is worked out once (a merge part
    is 5,000 rows; per row this function was the largest piece of the merge's Python)."""
    postgresql = ctx.conn.dialect.name == "postgresql"
    common = {
        "verify_status": "verifying" if imp.verify else "unknown",
        "verify_api": bool(imp.verify and ctx.settings.verifier_url),
        "import_id": imp.id,
        "created_at": ctx.now,
        "updated_at": None,
    }
    empty = dict.fromkeys(LEAD_FIELDS)
    rows = []
    for lead_id, email, domain, row in new:
        fields = empty.copy()
        for name, value in row.items():  # only the fields the file fills
            if value is not None and name in fields:
                fields[name] = clean_cell(value)
        # unrecognised countries are dropped, not stored
        if fields["country"] is not None:
            fields["country"] = normalize_country(fields["country"])
        derived = derived_columns(email, fields["first_name"], fields["last_name"], fields["company"])
        rows.append(
            {
                "id": lead_id,
                "email": email,
                "domain": domain,
                **fields,
                "custom": row.get("custom") or {},
                **derived,
                # PostgreSQL: written at once (the sort indexes carry it, so search pages can walk them);
                # its GIN indexes are on `lead_search`, filled by the search-index worker after storing
                # (issue 31), while a later UPDATE of `leads` would write every row a second time and,
                # MVCC, leave the table twice its size. SQLite: left to that worker, since the FTS5
                # trigger (~10,000 rows/s) would hold the single write lock 0.5 s longer per 5,000 rows,
                # and SQLite updates a row in place.
                "search_index": search_index_value(derived["search_text"]) if postgresql else None,
                **common,
            }
        )
    return rows


def clean_cell(value: str | None) -> str | None:
    """A cell as stored: stripped; empty is None (an empty cell never overwrites a value)."""
    if value is None:
        return None
    stripped = value.strip()
    return stripped or None


def compared_columns() -> list[Any]:
    """The columns of `leads` that `lead_changes` compares with (the search index only as `indexed`, whether
    the lead is indexed): all a look-up for `existing: update` needs to read."""
    return [
        *(leads.c[name] for name in (*LEAD_FIELDS, "custom", "sort_name", "search_text")),
        leads.c.search_index.is_not(None).label("indexed"),
    ]


def lead_changes(email: str, row: Row, now: Mapping[str, Any], indexed: bool) -> dict[str, Any]:
    """What `existing: update` changes in the known lead `now` from the file's `row`, column by column (an
    empty dict: the row would change nothing, and nothing is written).

    Each field the file fills with a value other than the stored one (an empty cell leaves the field as it
    is), the custom fields merged, the sort and search columns derived from the result where they differ,
    `search_index` re-derived if the lead is `indexed` (a pending one stays pending), `enriched_at` cleared
    when an enrichment input changes (the lead goes back to enrichment) and `country_source` when the
    country does. `updated_at` is the caller's: only a lead that changes gets it.

    `now` holds the lead's `compared_columns` by name: a plain dict (`row_dicts`), since an attribute of a
    SQLAlchemy row costs ~0.4 µs and this reads a dozen a lead (a third of its time; issue 31)."""
    current = now
    changes: dict[str, Any] = {}
    get = row.get
    for name in LEAD_FIELDS:  # in this order: callers key their statements by the changed columns
        value = get(name)
        if value is None:
            continue
        value = value.strip()  # `clean_cell`, inlined: an empty cell never overwrites a value
        if not value:
            continue
        if name == "country":
            # unrecognised countries are dropped, not stored
            value = normalize_country(value)
            if value is None:
                continue
        if value != current[name]:
            changes[name] = value
    if changes:
        first, last, company = (
            changes.get("first_name", current["first_name"]),
            changes.get("last_name", current["last_name"]),
            changes.get("company", current["company"]),
        )
    else:
        first, last, company = current["first_name"], current["last_name"], current["company"]
    for name, value in derived_columns(email, first, last, company).items():
        if value != current[name]:
            changes[name] = value
    if "search_text" in changes and indexed:
        changes["search_index"] = search_index_value(changes["search_text"])
    if extra := row.get("custom"):
        stored = current["custom"] or {}
        custom = {**stored, **extra}
        if custom != stored:
            changes["custom"] = custom
    if changes and not ENRICHMENT_INPUTS.isdisjoint(changes):
        changes["enriched_at"] = None
    if "country" in changes:
        changes["country_source"] = None
    return changes


def row_dicts(rows: Iterable[Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Each SQLAlchemy row of one result (all with the same columns) with its values as a dict, for
    `lead_changes`: `dict(zip(...))` with the names read once costs 0.9 µs a row, a row's `_asdict()` 3.9."""
    keys: tuple[str, ...] | None = None
    for r in rows:
        if keys is None:
            keys = r._fields
        yield r, dict(zip(keys, r, strict=True))


def update_lead_values(ctx: WorkspaceContext, new: Callable[[str], Any]) -> dict[str, Any]:
    """The SET clause of PostgreSQL's `existing: update` statement: `new(name)` is the staged column carrying
    a `lead_changes` value, NULL where that column does not change (each column is `COALESCE(new,
    current)`), and `reset_enrichment` whether `enriched_at` is cleared. An unchanged indexed column keeps
    its value, so the row's new version can stay on its page without index entries (a HOT update)."""
    return {
        **{
            name: func.coalesce(new(name), leads.c[name])
            for name in (*LEAD_FIELDS, "sort_name", "search_text")
        },
        # staged as JSON text: a NULL JSON column would hold the JSON value `null`, not SQL NULL
        "custom": func.coalesce(cast(new("custom"), JSONB), leads.c.custom),
        # a NULL new search index is a value (a text too long to index) when the search text changes
        "search_index": case((new("search_text").is_(None), leads.c.search_index), else_=new("search_index")),
        "enriched_at": case((new("reset_enrichment"), null()), else_=leads.c.enriched_at),
        "country_source": case((new("country").is_not(None), null()), else_=leads.c.country_source),
        "updated_at": ctx.now,
    }
