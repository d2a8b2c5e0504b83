"""What the import merge's claim of a queued part costs SQLite with 40 parts queued, before and after the
covering index `ix_import_queue_waiting` (migration 0034), in a scratch file (issue 31).

A 5,000-row part is about 0.6 MB of JSON in `import_queue.rows`, stored in overflow pages, and the table's
`created_at` comes after it: reading `created_at` walks the overflow chain. Timed (CPU ms, median of five)
with the page cache warm, and cold as in the service, where the server process queues a chunk (a write)
before the worker's next claim, so the worker's connection finds the database changed and empties its
cache. The statements are those of `merge._claim` and `merge.queued_import_workspaces`.

    .venv/bin/python bench/sqlite_queue_claim.py
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

PARTS = 40
CLAIM = (
    "SELECT import_id FROM import_queue WHERE workspace_id = 'ws_1' GROUP BY import_id "
    "ORDER BY min(created_at) LIMIT 20"
)
WORKSPACES = "SELECT workspace_id FROM import_queue GROUP BY workspace_id ORDER BY min(created_at) LIMIT 5"


def main() -> None:
    path = Path(tempfile.mkdtemp(prefix="queue-claim-")) / "q.db"
    conn = sqlite3.connect(path)
    other = sqlite3.connect(path)
    for c in (conn, other):
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA cache_size=-65536")
    conn.execute(
        "CREATE TABLE import_queue (import_id VARCHAR(40) NOT NULL, seq INTEGER NOT NULL, "
        "workspace_id VARCHAR(40) NOT NULL, rows JSON NOT NULL, created_at DATETIME NOT NULL, "
        "PRIMARY KEY (import_id, seq))"
    )
    conn.execute("CREATE INDEX ix_import_queue_created ON import_queue (created_at)")
    conn.execute("CREATE TABLE other (x)")
    part = json.dumps(
        [
            {
                "email": f"person{i}@gmail.com",
                "first_name": f"First{i}",
                "last_name": "Last",
                "company": "Co 12",
            }
            for i in range(5_000)
        ]
    )
    for seq in range(PARTS):
        conn.execute(
            "INSERT INTO import_queue VALUES ('imp_1', ?, 'ws_1', ?, ?)",
            (seq, part, f"2026-11-27 00:00:{seq:02d}"),
        )
    conn.commit()

    def timed(statement: str, cold: bool) -> float:
        spent = []
        for i in range(5):
            if cold:
                other.execute("INSERT INTO other VALUES (?)", (i,))
                other.commit()
            started = time.process_time()
            conn.execute(statement).fetchall()
            spent.append(time.process_time() - started)
        return statistics.median(spent) * 1e3

    print(f"{PARTS} parts of {len(part) / 1e6:.2f} MB queued; CPU ms a statement, warm / cold page cache")
    for label in ("without the index", "with ix_import_queue_waiting"):
        if label.startswith("with "):
            conn.execute(
                "CREATE INDEX ix_import_queue_waiting ON import_queue (workspace_id, import_id, created_at)"
            )
            conn.commit()
        plan = conn.execute("EXPLAIN QUERY PLAN " + CLAIM).fetchall()[0][3]
        print(
            f"{label}: claim {timed(CLAIM, False):.2f} / {timed(CLAIM, True):.2f}, "
            f"queued workspaces {timed(WORKSPACES, False):.2f} / {timed(WORKSPACES, True):.2f} ({plan})"
        )


if __name__ == "__main__":
    main()
