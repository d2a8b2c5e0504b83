"""`outreach leads import FILE.csv`: the command's own overhead beside the import it drives (issue 30).

Writes a CSV file of `--rows` rows (semicolon-delimited, UTF-8 with BOM, a custom column), then:

1. reads it as the command does (`csv_rows.read_csv`: decode, sniff, header, mapping, rows), timed;
2. builds the chunk bodies as the command does (`ImportIn.validate_fast`), timed;
3. runs the real command (`outreach leads import`) as a process on a fresh database (OUTREACH_DATABASE_URL,
   default a new SQLite file; a workspace on the agency plan made with `outreach init`), timed from start
   to the printed finished import (every row stored and listable), with its CPU time.

The overhead is (1 + 2) / 3: the work the command adds to what `POST /leads/import` and the merge do anyway.
CPU microseconds per row are printed for each stage (they hold on a shared machine where rates drift).

    .venv/bin/python bench/csv_import.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from outreach_app.lead_files import ImportJob, _chunk_body  # noqa: E402
from outreach_core.imports.csv_rows import chunks, read_csv  # noqa: E402
from outreach_core.imports.schemas import MAX_IMPORT_ROWS  # noqa: E402


def write_file(path: Path, rows: int) -> None:
    with path.open("w", newline="", encoding="utf-8-sig") as out:
        writer = csv.writer(out, delimiter=";")
        writer.writerow(["E-mail", "First Name", "Last Name", "Company Name", "Job Title", "Lead score"])
        writer.writerows(
            (
                f"person{i}@company{i % 10_000}.example",
                f"First{i}",
                f"Last{i}",
                f"Company {i % 10_000}",
                "CEO",
                i,
            )
            for i in range(rows)
        )


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    rows = args.rows
    work = Path(tempfile.mkdtemp(prefix="csv-bench-"))
    source = work / "leads.csv"
    write_file(source, rows)
    data = source.read_bytes()
    print(f"{rows:,} rows, {len(data) / 1e6:.1f} MB")

    wall, before = time.perf_counter(), cpu()
    read = read_csv(data)
    read_s, read_cpu = time.perf_counter() - wall, cpu() - before
    job = ImportJob(source, "bench", None, {}, "skip", False)  # type: ignore[arg-type]
    parts = list(chunks(read.rows, MAX_IMPORT_ROWS))
    wall, before = time.perf_counter(), cpu()
    for index, part in enumerate(parts):
        _chunk_body(job, read, "imp_x" if index else None, part, index == len(parts) - 1)
    build_s, build_cpu = time.perf_counter() - wall, cpu() - before

    env = dict(os.environ)
    env.setdefault("OUTREACH_DATABASE_URL", f"sqlite+aiosqlite:///{work / 'bench.db'}")
    env["XDG_STATE_HOME"] = str(work / "state")
    outreach = [sys.executable, "-m", "outreach_app.cli"]
    made = subprocess.run(
        [*outreach, "init", "--email", "b@example.com", "--name", "B", "--workspace", "Bench",
         "--slug", f"bench-{os.getpid()}", "--plan", "agency"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    slug = json.loads(made.stdout)["slug"]
    wall, before = time.perf_counter(), children_cpu()
    done = subprocess.run(
        [*outreach, "leads", "import", str(source), "--workspace", slug],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    run_s, run_cpu = time.perf_counter() - wall, children_cpu() - before
    finished = json.loads(done.stdout)
    assert finished["created"] == rows and finished["queued"] == 0, finished

    def per_row(seconds: float) -> str:
        return f"{seconds / rows * 1e6:7.1f} µs/row"

    print(f"read the file        {read_s:6.2f} s  cpu {per_row(read_cpu)}")
    print(f"build chunk bodies   {build_s:6.2f} s  cpu {per_row(build_cpu)}")
    print(f"the command, whole   {run_s:6.2f} s  cpu {per_row(run_cpu)}  ({rows / run_s:,.0f} rows/s stored)")
    print(f"command's own work   {(read_s + build_s) / run_s:6.1%} of the import's time")


if __name__ == "__main__":
    main()
