from __future__ import annotations

from typing import Any

from outreach_core.context import WorkspaceContext
from outreach_core.endpoint import Endpoint
from outreach_core.imports.operations import get_import, import_leads, list_imports
from outreach_core.imports.schemas import ImportIn, LeadImport, LeadImports


async def _describe_import(ctx: WorkspaceContext, args: dict[str, Any]) -> str:
    rows = len(args.get("rows") or [])
    name = args.get("fileName") or "this file"
    target = args.get("list") or {}
    where = f" onto the list “{target.get('name') or target.get('id')}”" if target else ""
    existing = "updated with the file's values" if args.get("existing") == "update" else "left as they are"
    chunk = "the next chunk of " if args.get("importId") else ""
    return f"Import {chunk}{rows:,} rows of {name}{where}? Leads already in the workspace are {existing}."


ENDPOINTS = [
    Endpoint("GET", "/leads/imports", list_imports, LeadImports, read_only=True, tag="leads"),
    Endpoint("GET", "/leads/imports/{id}", get_import, LeadImport, read_only=True, tag="leads"),
    Endpoint(
        "POST",
        "/leads/import",
        import_leads,
        LeadImport,
        body=ImportIn,
        confirm=_describe_import,
        tag="leads",
    ),
]
