"""A file's row as the lead the import stores: cleaned cells, the derived sort and search columns."""

from __future__ import annotations

from typing import Any

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.geo import normalize_country
from outreach_core.leads.schemas import LEAD_FIELDS
from outreach_core.targets.rules import derived_columns, search_index_value

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
