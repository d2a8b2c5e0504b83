from __future__ import annotations

from outreach_core.imports.csv_import import import_leads_csv, read_csv_body
from outreach_core.imports.operations import (
    chunk_waits_for,
    get_import,
    import_leads,
    list_imports,
    prepare_import_leads,
)
from outreach_core.imports.schemas import CsvImport, ImportCsvIn, ImportIn, LeadImport, LeadImports
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint


async def _describe_import(ctx: WorkspaceContext, body: ImportIn) -> str:
    name = body.file_name or "this file"
    target = body.target_list
    where = f" onto the list “{target.name or target.id}”" if target is not None else ""
    existing = "updated with the file's values" if body.existing == "update" else "left as they are"
    chunk = "the next chunk of " if body.import_id else ""
    rows = len(body.rows)
    return f"Import {chunk}{rows:,} rows of {name}{where}? Leads already in the workspace are {existing}."


async def _describe_csv_import(ctx: WorkspaceContext, body: ImportCsvIn) -> str:
    read = read_csv_body(body)
    name = body.file_name or "this CSV file"
    target = body.target_list
    where = f" onto the list “{target.name or target.id}”" if target is not None else ""
    existing = "updated with the file's values" if body.existing == "update" else "left as they are"
    columns = ", ".join(
        f"{field} from “{column}”" for field, column in read.columns.described(read.header).items()
    )
    return (
        f"Import {len(read.rows):,} rows of {name}{where} ({columns})? Leads already in the workspace are "
        f"{existing}."
    )


ENDPOINTS = (
    Endpoint("GET", "/leads/imports", list_imports, LeadImports, read_only=True, tag="leads"),
    Endpoint("GET", "/leads/imports/{id}", get_import, LeadImport, read_only=True, tag="leads"),
    Endpoint(
        "POST",
        "/leads/import",
        import_leads,
        LeadImport,
        body=ImportIn,
        confirm=_describe_import,
        prepare=prepare_import_leads,
        waits_for=chunk_waits_for,
        tag="leads",
        title="Import leads",
    ),
    Endpoint(
        "POST",
        "/leads/import/csv",
        import_leads_csv,
        CsvImport,
        body=ImportCsvIn,
        confirm=_describe_csv_import,
        tag="leads",
    ),
)
