"""`outreach leads import FILE.csv` and `outreach leads export`: lead lists as CSV files, for people.

The import reads the file with `outreach_core.imports.csv_rows` (encoding, delimiter, header row and column
names guessed as a spreadsheet would; `--map` overrides) and sends it in 5,000-row chunks through the same
core operation as `POST /leads/import` (`import_leads`, called through the runtime as the workspace
itself), so counters, limits, retries and the merge are exactly the API's. It merges the chunks in this
process as well (the import worker's own tick), so the command finishes with the final counters whether or
not `outreach serve` runs on the database; if it does, both merge, each part once.

An interrupted import resumes: the import's id is kept in a state file (`~/.local/state/outreach/imports/`,
named by the file's content, the workspace and the options); run the same command again and the chunks the
service already has are skipped (a chunk sent twice changes nothing anyway)."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import enum
import hashlib
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from outreach_core.imports.csv_rows import CsvRows, chunks, read_csv
from outreach_core.imports.endpoints import ENDPOINTS as IMPORT_ENDPOINTS
from outreach_core.imports.schemas import MAX_IMPORT_ROWS, ImportIn, LeadImport
from outreach_core.kernel.context import Principal, workspace_itself
from outreach_core.kernel.endpoint import AnyEndpoint
from outreach_core.kernel.errors import NotFound
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import state_home
from outreach_core.leads.export import COLUMNS, custom_keys, export_batch, list_id_named
from outreach_core.workspace.setup import workspace_id_of

COUNTERS = ("created", "updated", "skipped", "duplicates", "suppressed", "invalid", "overLimit")


class Existing(enum.StrEnum):
    skip = "skip"
    update = "update"


def _endpoint(name: str) -> AnyEndpoint:
    return next(e for e in IMPORT_ENDPOINTS if e.name == name)


def state_dir() -> Path:
    return state_home() / "imports"


@dataclass(frozen=True)
class ImportJob:
    """One run of `outreach leads import`: what to send and where."""

    file: Path
    workspace: str
    list_name: str | None
    overrides: dict[str, str]
    existing: Existing
    verify: bool

    def state_file(self, data: bytes, workspace_id: str) -> Path:
        options = json.dumps(
            [workspace_id, self.list_name, sorted(self.overrides.items()), self.existing, self.verify]
        )
        digest = hashlib.sha256(data + options.encode()).hexdigest()[:32]
        return state_dir() / f"{digest}.json"


def parse_map(text: str | None) -> dict[str, str]:
    """`email=E-mail,firstName=First` -> {"email": "E-mail", "firstName": "First"}."""
    pairs: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, column = part.partition("=")
        if not sep or not name.strip() or not column.strip():
            raise ValueError(f"--map takes field=Column pairs separated by commas, not {part!r}")
        pairs[name.strip()] = column.strip()
    return pairs


def _chunk_body(
    job: ImportJob, read: CsvRows, import_id: str | None, rows: list[Any], final: bool
) -> ImportIn:
    data: dict[str, Any] = {
        "importId": import_id,
        "fileName": job.file.name[:300],
        "existing": str(job.existing),
        "verify": job.verify,
        "rows": rows,
        "final": final,
    }
    if import_id is None and job.list_name:
        data["list"] = {"name": job.list_name}
    if final:
        data["clientInvalid"] = read.rejected_count
    fast = ImportIn.validate_fast(data)
    return fast if fast is not None else ImportIn.model_validate(data)


async def _merge_here(runtime: Runtime, stop: asyncio.Event) -> None:
    """The import worker's tick, in this process, until `stop` is set."""
    from workers.imports import tick

    while not stop.is_set():
        if not await tick(runtime):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.05)


@contextlib.asynccontextmanager
async def merging(runtime: Runtime) -> AsyncIterator[None]:
    stop = asyncio.Event()
    task = asyncio.create_task(_merge_here(runtime, stop))
    try:
        yield
    finally:
        stop.set()
        await task


async def run_import(runtime: Runtime, job: ImportJob, console: Console) -> LeadImport:
    """Send the file, merge, and show the progress; returns the import once every row is stored."""
    data = await asyncio.to_thread(job.file.read_bytes)
    read = read_csv(data, job.overrides)
    workspace_id = await runtime.system_read(workspace_id_of, job.workspace)
    caller: Principal = workspace_itself(workspace_id, "csv-import")
    total = len(read.rows)
    console.print(
        f"[bold]{job.file.name}[/]: {total:,} rows ({read.rejected_count:,} left out), {read.encoding}, "
        f"delimiter {read.delimiter!r}, header on line {read.columns.header_line}"
    )
    for field, column in read.columns.described(read.header).items():
        console.print(f"  {field:<10} <- {column}")
    if read.columns.custom:
        console.print(f"  custom     <- {', '.join(read.columns.custom)}")
    for line, why in read.rejected[:10]:
        console.print(f"  [yellow]line {line} left out: {why}[/]")

    state = job.state_file(data, workspace_id)
    import_id, start = await _resume(runtime, caller, state)
    parts = list(chunks(read.rows, MAX_IMPORT_ROWS)) or [[]]
    call = _endpoint("import_leads")
    begun = time.monotonic()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>8} rows/s"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        sent = progress.add_task("accepted", total=total, completed=start * MAX_IMPORT_ROWS, rate="")
        stored = progress.add_task("stored  ", total=total, rate="")
        async with merging(runtime):
            imported: LeadImport | None = None
            for index in range(start, len(parts)):
                final = index == len(parts) - 1
                body = _chunk_body(job, read, import_id, parts[index], final)
                imported = await runtime.call(caller, call, body=body)
                if import_id is None:
                    import_id = imported.id
                    await asyncio.to_thread(_save_import, state, import_id, job.file)
                done = min(total, (index + 1) * MAX_IMPORT_ROWS)
                progress.update(sent, completed=done, rate=_rate(done, begun))
            assert import_id is not None
            while True:
                imported = await runtime.read(caller, _get_import, import_id)
                merged = max(0, imported.rows - imported.queued - read.rejected_count)
                progress.update(stored, completed=min(total, merged), rate=_rate(merged, begun))
                if imported.queued == 0 and imported.status != "importing":
                    break
                if imported.status == "failed":
                    break
                await asyncio.sleep(0.2)
    await asyncio.to_thread(state.unlink, missing_ok=True)
    _show_counters(console, imported, time.monotonic() - begun)
    return imported


async def _get_import(ctx: Any, import_id: str) -> LeadImport:
    from outreach_core.imports.operations import get_import

    return await get_import(ctx, import_id)


def _saved_import(state: Path) -> str | None:
    try:
        return str(json.loads(state.read_text())["importId"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _save_import(state: Path, import_id: str, file: Path) -> None:
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"importId": import_id, "file": str(file)}))


async def _resume(runtime: Runtime, caller: Principal, state: Path) -> tuple[str | None, int]:
    """The import to continue and the chunk to continue from, when an earlier run was interrupted."""
    import_id = await asyncio.to_thread(_saved_import, state)
    if import_id is None:
        return None, 0
    try:
        earlier = await runtime.read(caller, _get_import, import_id)
    except NotFound:
        earlier = None
    if earlier is None or earlier.status != "importing":
        await asyncio.to_thread(state.unlink, missing_ok=True)
        return None, 0
    return import_id, earlier.rows // MAX_IMPORT_ROWS


def _rate(rows: int, begun: float) -> str:
    seconds = time.monotonic() - begun
    return f"{rows / seconds:,.0f}" if seconds > 0 and rows else ""


def _show_counters(console: Console, imported: LeadImport, seconds: float) -> None:
    table = Table(title=imported.status, caption=imported.id, show_header=False)
    values = imported.model_dump(by_alias=True)
    for name in ("rows", *COUNTERS):
        table.add_row(name, f"{values[name]:,}")
    console.print(table)
    rate = imported.rows / seconds if seconds > 0 else 0
    console.print(f"{imported.rows:,} rows in {seconds:.1f} s ({rate:,.0f} rows/s)")
    if imported.failure_reason:
        console.print(f"[red]{imported.failure_reason}[/]")
    elif imported.status == "enriching":
        console.print(
            "email providers and countries are filled in by the service's workers (`outreach serve`)"
        )


async def run_export(runtime: Runtime, workspace: str, list_name: str | None, out: IO[str]) -> int:
    """Write the leads as CSV (UTF-8; the header row first); returns how many were written."""
    workspace_id = await runtime.system_read(workspace_id_of, workspace)
    caller = workspace_itself(workspace_id, "csv-export")
    list_id = await runtime.read(caller, list_id_named, list_name) if list_name else None
    keys = await runtime.read(caller, custom_keys, list_id)
    writer = csv.writer(out)
    writer.writerow([header for header, _ in COLUMNS] + keys)
    written = 0
    after: str | None = ""
    while after is not None:
        cells, after = await runtime.read(caller, export_batch, list_id, after, keys)
        writer.writerows(cells)
        written += len(cells)
    return written


def stderr_console() -> Console:
    return Console(file=sys.stderr, highlight=False)
