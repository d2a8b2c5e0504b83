"""`import_leads_csv`: a small CSV file imported in one call (the MCP tool for assistants holding a file).

The file is read by `csv_rows` (the same reader as `outreach leads import`) and imported by `import_leads`
as one final chunk, so counters, limits and the merge are exactly those of `POST /leads/import`."""

from __future__ import annotations

from outreach_core.imports.csv_rows import Columns, CsvProblem, CsvRows, read_csv_text
from outreach_core.imports.operations import import_leads
from outreach_core.imports.schemas import (
    MAX_IMPORT_ROWS,
    CsvImport,
    ImportCsvIn,
    ImportIn,
    LeadImport,
    RejectedRow,
)
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.errors import InvalidInput, PayloadTooLarge

SHOWN_REJECTED = 20


def read_csv_body(body: ImportCsvIn) -> CsvRows:
    """The rows of the body's CSV text; 422 (field `csv` or `map`) when it cannot be read as a lead list,
    413 over 5,000 data rows."""
    try:
        read = read_csv_text(body.csv, {str(k): v for k, v in (body.map or {}).items()})
    except CsvProblem as problem:
        raise InvalidInput.field("map" if str(problem).startswith("--map") else "csv", str(problem)) from None
    if len(read.rows) + read.rejected_count > MAX_IMPORT_ROWS:
        raise PayloadTooLarge(
            f"At most {MAX_IMPORT_ROWS:,} rows in one call; use `import_leads` in chunks (or the "
            "`outreach leads import` command) for a larger file.",
            {"rows": len(read.rows) + read.rejected_count, "limit": MAX_IMPORT_ROWS},
        )
    return read


def csv_answer(imported: LeadImport, read: CsvRows) -> CsvImport:
    columns: Columns = read.columns
    return CsvImport(
        import_=imported,
        encoding=read.encoding,
        delimiter=read.delimiter,
        header_line=columns.header_line,
        columns=columns.described(read.header),
        custom=list(columns.custom),
        ignored=columns.ignored,
        rejected=[RejectedRow(line=line, reason=why) for line, why in read.rejected[:SHOWN_REJECTED]],
    )


async def import_leads_csv(ctx: WorkspaceContext, body: ImportCsvIn) -> CsvImport:
    """Import a small CSV file (up to 5,000 rows) given as text, in one call. The header row is found and
    its columns mapped to lead fields by name (Email, E-mail, First Name, Company Name, Job Title, LinkedIn
    ...; a `Name` column is split into first and last name); `map` overrides the mapping; other columns
    become custom fields. The answer shows the mapping used and the import: poll `get_import` with its id
    until `status` is `done`. For larger files use `import_leads` in 5,000-row chunks."""
    read = read_csv_body(body)
    chunk = ImportIn.model_validate(
        {
            "fileName": body.file_name,
            "list": body.target_list.model_dump(exclude_none=True) if body.target_list else None,
            "existing": body.existing,
            "verify": body.verify,
            "clientInvalid": read.rejected_count,
            "rows": read.rows,
            "final": True,
        }
    )
    return csv_answer(await import_leads(ctx, chunk), read)
