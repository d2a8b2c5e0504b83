"""A lead import end to end, as users run it: the real `outreach serve` with all its workers.

Starts `outreach serve` (with its worker processes) on a free port against OUTREACH_DATABASE_URL
(default a fresh SQLite file), with a local DNS server answering every MX query at once (so enrichment does
real lookups without the network), and a workspace on the agency plan. Then, for each `--existing` mode, one
import of `--rows` rows in 5,000-row chunks into a new list (`skip` creates the leads; `update`, run after it,
meets every address again), while a second thread polls from outside. Reports:

- chunks accepted: rows / seconds from the first request to the last response;
- stored and listable: rows / seconds until the import has nothing `queued` and the list shows every row
  (`GET /leads?listId=`);
- done: seconds from "stored and listable" until `status` is `done` (ESP and country set by the enrich
  worker);
- `GET /leads?listId=` page 1 latency (p50/p95) while the import runs (from the first chunk to `done`);
- when a search (`GET /leads?search=<the last row's address>`) first finds the last row, after stored;
- CPU microseconds per row of each stage (accepting the chunks; from the first chunk to stored; from stored
  to done), per process: `outreach serve` (the requests, the poller's pages included), its worker processes
  (`workers`, their sum, then each child: `import`, the merge alone; `others`, enrichment and the rest),
  and on PostgreSQL the database's backends, by the process at the other end of each connection
  (`CpuMeter`). Rates drift with the machine's load; these hold.

`outreach serve` runs its workers in two child processes (issue 31), as the README starts it. Before the
measured imports, one row is imported and waited for, so that they meet running worker processes (a service
in use), not ones still starting.

PostgreSQL: `--autovacuum off` switches autovacuum off on every table an import touches
(`ALTER TABLE ... SET (autovacuum_enabled = off)`), as on a server without it. `--stop-during` sends SIGTERM
to the server right after the last chunk of the last import and reports how long it takes to exit.

    .venv/bin/python bench/import_e2e.py [--rows 200000] [--existing skip,update] [--autovacuum off]
        [--change title|custom] [--concurrency N]

`--concurrency N` sends the rows from N uploaders at once, each a client sending an import of its own
(chunk j to uploader j mod N; the rows made beforehand); chunks accepted is then all rows over the time from
the first request to the last response, and stored and done wait for every import.

`--change` makes the update import realistic: every row carries a new value of one field (`title`, or a
custom variable), while by default it re-imports identical rows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import statistics
import threading
import time
from typing import Any

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import httpx
from _server import free_port, served

CHUNK = 5_000
WORDS = ["acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wayne", "wonka", "tyrell"]
CONSUMER = ["gmail.com", "outlook.com", "yahoo.com", "proton.me", "icloud.com", "zoho.com"]
TOUCHED = [
    "leads",
    "list_leads",
    "lead_counters",
    "lead_counter_deltas",
    "lead_imports",
    "import_queue",
    "import_seen",
    "domain_cache",
]


COMPANY_DOMAINS = 10_000


def row(i: int, rng: random.Random, change: str | None = None) -> dict[str, Any]:
    """Row `i`: two in three at a consumer provider, the rest at one of 10,000 company domains (issue 31).
    `change` names a field given a new value (`title`, or `custom`: a custom variable), for an update import
    that changes every lead."""
    n = i % COMPANY_DOMAINS
    company = f"{WORDS[n % 10]} {WORDS[n // 10 % 10]} {n}"
    domain = rng.choice(CONSUMER) if i % 3 else f"{company.replace(' ', '')}.example"
    values: dict[str, Any] = {
        "email": f"person{i}@{domain}",
        "firstName": f"First{i % 100}",
        "lastName": f"Last{i % 997}",
        "company": company.title(),
        "phone": "+49 30 1234567" if i % 4 == 0 else None,
    }
    if change == "title":
        values["title"] = f"Head of {WORDS[i % 10].title()} {i % 50}"
    elif change == "custom":
        values["custom"] = {"campaign": f"spring {i % 20}"}
    return values


# --- a DNS server answering every MX query with one mail server -------------------------------------------


def start_dns() -> int:
    """A UDP DNS server on a free port, in a daemon thread: MX `10 mx.<name>` for every MX query."""
    port = free_port()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", port))

    def serve() -> None:
        while True:
            data, peer = sock.recvfrom(4096)
            query = dns.message.from_wire(data)
            reply = dns.message.make_response(query)
            question = query.question[0]
            if question.rdtype == dns.rdatatype.MX:
                name = question.name.to_text()
                reply.answer.append(dns.rrset.from_text(name, 3600, "IN", "MX", f"10 mx.{name}"))
            reply.flags |= dns.flags.RA
            sock.sendto(reply.to_wire(), peer)

    threading.Thread(target=serve, daemon=True).start()
    return port


# --- CPU of the processes doing the work ------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _child_kind(pid: int) -> str:
    """Which of `outreach serve`'s worker processes `pid` is: `import` (`--only import`, the merge alone)
    or `others` (every other worker; all of them where the server starts one child)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return "others"
    at = args.index(b"--only") + 1 if b"--only" in args else len(args)
    return "import" if args[at : at + 1] == [b"import"] else "others"


CHILDREN = ("import", "others")
WORKER_SPLIT = tuple(f"workers: {kind}" for kind in CHILDREN)
"""The worker processes' CPU by child (`workers` is their sum)."""
DB_SPLIT = ("database: server", "database: import", "database: others", "database: other")
"""The database's CPU by the process at the other end of each backend's connection."""


def _local_ports(owners: dict[str, list[int]]) -> dict[int, str]:
    """The local TCP ports of the sockets each group of processes holds open (from /proc: the sockets'
    inodes in each process's file descriptors, their local ports in /proc/net/tcp and tcp6)."""
    inodes: dict[int, str] = {}
    for kind, pids in owners.items():
        for pid in pids:
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        inodes[int(target[8:-1])] = kind
            except OSError:
                continue
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            inode = int(fields[9])
            if inode in inodes:
                found[int(fields[1].rsplit(":", 1)[1], 16)] = inodes[inode]
    return found


class CpuMeter(threading.Thread):
    """CPU seconds, summed since the start, of `outreach serve` (requests), its worker process (the merge,
    enrichment, the search index) and, on PostgreSQL, the backends of the benchmark's database (found by
    their process titles, `postgres: [cluster:] user database ...`, sampled every 0.2 s: a backend's last
    0.2 s before it exits can be missed). The machine's other processes are not counted."""

    def __init__(self, server_pid: int, database: str | None) -> None:
        super().__init__(daemon=True)
        self.server_pid = server_pid
        self.database = database
        self.seen: dict[tuple[str, int], float] = {}
        self.ports: dict[int, str] = {}
        self.backend_of: dict[int, str] = {}
        self.child_of: dict[int, str] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def _backends(self) -> list[tuple[int, int | None]]:
        """The database's backends: (pid, the client's TCP port, from the process title)."""
        if self.database is None:
            return []
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        title = f.read().split(b"\0")[0].decode(errors="replace")
                except OSError:
                    continue
                parts = title.split()  # "postgres: [cluster:] user database host(port) state"
                if parts[:1] == ["postgres:"] and self.database in parts[2:4]:
                    at = parts.index(self.database, 2) + 1
                    client = parts[at] if at < len(parts) else ""
                    port = client.rsplit("(", 1)[-1].rstrip(")") if "(" in client else ""
                    found.append((int(entry), int(port) if port.isdigit() else None))
        return found

    def _client_of(self, port: int | None) -> str:
        """Which of our processes holds the client end of a backend's connection: `server` (the requests)
        or a worker process, `import` (the merge, its statistics) or `others` (enrichment, the search
        index); `other` if none (the benchmark itself)."""
        if port is None:
            return "other"
        if port not in self.ports:
            owners: dict[str, list[int]] = {"server": [self.server_pid], **{kind: [] for kind in CHILDREN}}
            for pid in _children(self.server_pid):
                owners[_child_kind(pid)].append(pid)
            self.ports.update(_local_ports(owners))
        return self.ports.get(port, "other")

    def sample(self) -> dict[str, float]:
        with self.lock:
            targets = [("server", self.server_pid)]
            for pid in _children(self.server_pid):
                targets.append(("workers", pid))
                if pid not in self.child_of:
                    self.child_of[pid] = _child_kind(pid)
            for pid, port in self._backends():
                targets.append(("database", pid))
                if pid not in self.backend_of:
                    self.backend_of[pid] = self._client_of(port)
            for key in targets:
                cpu = _cpu_s(key[1])
                if cpu is not None:
                    self.seen[key] = max(cpu, self.seen.get(key, 0.0))
            totals = dict.fromkeys(("server", "workers", "database", *WORKER_SPLIT, *DB_SPLIT), 0.0)
            for (kind, pid), cpu in self.seen.items():
                totals[kind] += cpu
                if kind == "workers":
                    totals["workers: " + self.child_of.get(pid, "others")] += cpu
                if kind == "database":
                    totals["database: " + self.backend_of.get(pid, "other")] += cpu
            return totals

    def run(self) -> None:
        while not self.stopping.wait(0.2):
            self.sample()


def per_row(before: dict[str, float], after: dict[str, float], rows: int) -> str:
    def us(kind: str) -> str:
        return f"{(after[kind] - before[kind]) / rows * 1e6:,.1f}"

    line = f"server {us('server')}, workers {us('workers')} ("
    line += ", ".join(f"{kind.split(': ')[1]} {us(kind)}" for kind in WORKER_SPLIT) + ")"
    if after["database"] - before["database"] > 0:  # whose connections the database's CPU served
        line += f", database {us('database')} ["
        line += ", ".join(f"{kind.split(': ')[1]}'s backends {us(kind)}" for kind in DB_SPLIT) + "]"
    return line


# --- PostgreSQL autovacuum --------------------------------------------------------------------------------


async def set_autovacuum(url: str, enabled: bool) -> None:
    from outreach_core.kernel.db.engine import create_engine

    engine = create_engine(url)
    async with engine.begin() as conn:
        for table in TOUCHED:
            await conn.exec_driver_sql(
                f"ALTER TABLE {table} SET (autovacuum_enabled = {'on' if enabled else 'off'})"
            )
    await engine.dispose()


# --- PostgreSQL's own counters: WAL, checkpoints, statistics -------------------------------------------

COUNTERS = """
SELECT w.wal_records, w.wal_fpi, w.wal_bytes, w.wal_buffers_full,
       b.checkpoints_timed + b.checkpoints_req AS checkpoints, b.buffers_checkpoint, b.buffers_clean,
       b.buffers_backend,
       (SELECT sum(tup_inserted + tup_updated + tup_deleted) FROM pg_stat_database
        WHERE datname IS NOT NULL AND datname <> current_database()) AS others_tuples,
       d.tup_inserted + d.tup_updated + d.tup_deleted AS our_tuples, d.blks_read, d.temp_bytes,
       (SELECT sum(analyze_count + autoanalyze_count) FROM pg_stat_user_tables) AS analyzes,
       (SELECT sum(vacuum_count + autovacuum_count) FROM pg_stat_user_tables) AS vacuums,
       pg_current_wal_lsn()::text AS lsn
FROM pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d WHERE d.datname = current_database()
"""


def pg_counters(url: str) -> dict[str, Any]:
    """PostgreSQL's counters now (`COUNTERS`; WAL and checkpoints are the whole server's: `others_tuples`
    says how much the other databases wrote meanwhile)."""
    import asyncpg  # type: ignore[import-untyped]

    async def read() -> dict[str, Any]:
        conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
        try:
            await conn.execute("SELECT pg_stat_clear_snapshot()")
            return dict(await conn.fetchrow(COUNTERS))
        finally:
            await conn.close()

    return asyncio.run(read())


def counters_per_row(before: dict[str, Any], after: dict[str, Any], rows: int) -> str:
    d = {k: after[k] - before[k] for k in before if k != "lsn"}
    return (
        f"server-wide WAL {d['wal_bytes'] / rows:,.0f} bytes/row ({d['wal_records'] / rows:.1f} records, "
        f"{d['wal_fpi'] / rows:.2f} full-page images a row), WAL buffers full {d['wal_buffers_full']}; "
        f"checkpoints {d['checkpoints']} "
        f"(buffers written by the checkpointer {d['buffers_checkpoint']:,}, bgwriter {d['buffers_clean']:,}, "
        f"backends {d['buffers_backend']:,}); analyzes {d['analyzes']}, vacuums {d['vacuums']}; blocks read "
        f"{d['blks_read']:,}, temp bytes {d['temp_bytes']:,}; tuples written here {d['our_tuples']:,}, "
        f"in the server's other databases {d['others_tuples']:,}"
    )


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


class WalByDatabase(threading.Thread):
    """`--wal-by-database`: the WAL written by each database (the first block a record touches names it),
    read with `pg_walinspect` every second as it is written (before checkpoints recycle it), from a
    connection to `--inspect-database` (so that this reading is not counted as the benchmark database's
    CPU). Diagnostic: reading the WAL costs the machine CPU of its own."""

    QUERY = """
    SELECT coalesce(substring(block_ref from 'rel [0-9]+/([0-9]+)/'), '') AS db, count(*) AS records,
           sum(record_length) AS bytes, sum(fpi_length) AS fpi_bytes,
           count(*) FILTER (WHERE fpi_length > 0) AS fpi
    FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) GROUP BY 1
    """

    def __init__(self, url: str, database: str) -> None:
        super().__init__(daemon=True)
        self.url = url.rsplit("/", 1)[0].replace("postgresql+asyncpg", "postgresql") + "/" + database
        self.totals: dict[str, dict[str, int]] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.failed: str | None = None
        self.read_upto = 0

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(self.url)
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        start = await conn.fetchval("SELECT pg_current_wal_flush_lsn()")
        try:
            while not self.stopping.is_set():
                await asyncio.sleep(1.0)
                end = await conn.fetchval("SELECT pg_current_wal_flush_lsn()")
                if end == start:
                    continue
                for r in await conn.fetch(self.QUERY, start, end):
                    with self.lock:
                        t = self.totals.setdefault(
                            r["db"], dict.fromkeys(("records", "bytes", "fpi_bytes", "fpi"), 0)
                        )
                        for k in t:
                            t[k] += int(r[k] or 0)
                start = end
                self.read_upto = end if isinstance(end, int) else _lsn(str(end))  # asyncpg: an int
        except Exception as exc:  # the WAL recycled before it was read: reported, not hidden
            self.failed = repr(exc)
        finally:
            await conn.close()

    def sample(self, upto: str | None = None) -> dict[str, dict[str, int]]:
        """The totals so far; `upto` (an LSN): once the reader has read at least that far."""
        deadline = time.monotonic() + 60
        while (
            upto is not None
            and self.read_upto < _lsn(upto)
            and not self.failed
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        with self.lock:
            return {db: dict(t) for db, t in self.totals.items()}


def wal_by_database(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], ours: str, rows: int
) -> str:
    def diff(db: str) -> dict[str, int]:
        a, b = after.get(db, {}), before.get(db, {})
        return {k: a.get(k, 0) - b.get(k, 0) for k in ("records", "bytes", "fpi_bytes", "fpi")}

    mine = diff(ours)
    others = [diff(db) for db in after if db not in (ours, "")]
    return (
        f"this database's WAL {mine['bytes'] / rows:,.0f} bytes/row ({mine['records'] / rows:.1f} records, "
        f"{mine['fpi'] / rows:.2f} full-page images a row = {mine['fpi_bytes'] / rows:,.0f} bytes/row); "
        f"records naming no relation {diff('')['bytes'] / rows:,.0f} bytes/row; other databases "
        f"{sum(o['bytes'] for o in others) / rows:,.0f} bytes/row"
    )


# --- the measurement ---------------------------------------------------------------------------------------


def percentile(samples: list[float], q: int) -> float:
    if not samples:
        return float("nan")
    return statistics.quantiles(samples, n=100)[q - 1] if len(samples) > 1 else samples[0]


class Poller(threading.Thread):
    """Polls `GET /leads` page 1 back to back from outside, the workspace's (default sort) and the import's
    list's in turn, timing each answer, until stopped."""

    def __init__(self, base: str, key: str, list_id: str) -> None:
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120)
        self.list_id = list_id
        self.latencies: dict[str, list[float]] = {"workspace": [], "list": []}
        self.stopping = threading.Event()
        self.enabled = True

    def run(self) -> None:
        if not self.enabled:
            return
        while not self.stopping.is_set():
            for name, params in (("workspace", {}), ("list", {"listId": self.list_id})):
                started = time.perf_counter()
                response = self.http.get("/api/v1/leads", params=params)
                self.latencies[name].append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            self.stopping.wait(0.05)

    def report(self) -> str:
        if not self.enabled:
            return "no pages polled"
        return "; ".join(
            f"GET /leads page 1 ({name}) during the import p50 {percentile(lat, 50):.0f} ms, "
            f"p95 {percentile(lat, 95):.0f} ms, max {max(lat):.0f} ms ({len(lat)} polls)"
            for name, lat in self.latencies.items()
            if lat
        )


def one_import(
    http: httpx.Client,
    base: str,
    key: str,
    rows: int,
    existing: str,
    stop_after: bool,
    cpu: CpuMeter,
    poll: bool = True,
    change: str | None = None,
    pg_url: str | None = None,
    wal: WalByDatabase | None = None,
    our_oid: str = "",
    concurrency: int = 1,
    db_url: str | None = None,
) -> str:
    list_id = http.post("/api/v1/lists", json={"name": f"E2E {existing} {time.time()}"}).json()["id"]
    poller = Poller(base, key, list_id)
    poller.enabled = poll
    rng = random.Random(7)
    import_id: str | None = None
    last_email = ""
    bodies = []
    if concurrency > 1:  # the rows made beforehand, not while the clock runs (the uploaders share them)
        bodies = [
            [
                row(i, rng, change if existing == "update" else None)
                for i in range(first, min(first + CHUNK, rows))
            ]
            for first in range(0, rows, CHUNK)
        ]
    counters_start = pg_counters(pg_url) if pg_url else None
    wal_start = wal.sample(counters_start["lsn"] if counters_start else None) if wal else None
    cpu_start = cpu.sample()
    started = time.perf_counter()
    poller.start()
    if concurrency == 1:
        for first in range(0, rows, CHUNK):
            body: dict[str, Any] = {
                "rows": [
                    row(i, rng, change if existing == "update" else None)
                    for i in range(first, min(first + CHUNK, rows))
                ],
                "final": first + CHUNK >= rows,
                "existing": existing,
            }
            if import_id is None:
                body["list"] = {"id": list_id}
            else:
                body["importId"] = import_id
            last_email = body["rows"][-1]["email"]
            response = http.post("/api/v1/leads/import", json=body)
            response.raise_for_status()
            import_id = response.json()["id"]
        import_ids = [import_id]
    else:
        last_email = bodies[-1][-1]["email"]
        import_ids = upload_at_once(base, key, list_id, existing, bodies, concurrency)
        import_id = import_ids[0]
    accepted = time.perf_counter() - started
    cpu_accepted = cpu.sample()
    changed = f" changing {change}" if change and existing == "update" else ""
    uploaders = f" from {concurrency} uploaders at once (an import each)" if concurrency > 1 else ""
    line = (
        f"existing={existing}{changed}: {rows:,} rows{uploaders} accepted in {accepted:.1f} s = "
        f"{rows / accepted:,.0f} rows/s "
        f"(CPU µs/row while accepting: {per_row(cpu_start, cpu_accepted, rows)})"
    )
    if stop_after:
        poller.stopping.set()
        return line
    stored_at = done_at = found_at = None
    counters_stored = wal_stored = None
    unenriched: int | None = None
    cpu_stored = cpu_done = cpu_accepted
    while done_at is None:
        imps = [http.get(f"/api/v1/leads/imports/{i}").json() for i in import_ids]
        imp = {k: sum(i[k] for i in imps) for k in ("queued", "created", "updated", "skipped")}
        imp["status"] = "done" if all(i["status"] == "done" for i in imps) else "working"
        now = time.perf_counter()
        if stored_at is None and imp["queued"] == 0:
            listed = http.get("/api/v1/leads", params={"listId": list_id, "pageSize": 10}).json()
            if listed["total"] >= rows or not listed.get("totalExact", True):
                stored_at, cpu_stored = now, cpu.sample()
                unenriched = (
                    asyncio.run(left_to_enrich(db_url, [str(i) for i in import_ids])) if db_url else None
                )
                counters_stored = pg_counters(pg_url) if pg_url else None
                wal_stored = wal.sample(counters_stored["lsn"] if counters_stored else None) if wal else None
        if stored_at is not None and found_at is None:
            searched = http.get("/api/v1/leads", params={"search": last_email, "pageSize": 10}).json()
            if searched["total"] >= 1:
                found_at = time.perf_counter()
        if stored_at is not None and imp["status"] == "done":
            done_at, cpu_done = now, cpu.sample()
        else:
            time.sleep(0.2)
    poller.stopping.set()
    poller.join()
    assert stored_at is not None and found_at is not None
    if counters_start is not None and counters_stored is not None:
        line += (
            f"; first chunk to stored, PostgreSQL: {counters_per_row(counters_start, counters_stored, rows)}"
        )
    if wal is not None and wal_start is not None and wal_stored is not None:
        line += f"; {wal_by_database(wal_start, wal_stored, our_oid, rows)}"
        if wal.failed:
            line += f" (the WAL reader failed: {wal.failed})"
    return (
        f"{line}; stored and listable after {stored_at - started:.1f} s = "
        f"{rows / (stored_at - started):,.0f} rows/s (CPU µs/row from the first chunk to stored: "
        f"{per_row(cpu_start, cpu_stored, rows)}); "
        + (f"{unenriched:,} of its leads left to enrich at stored; " if unenriched is not None else "")
        + "the last row found by search "
        f"{max(0.0, found_at - stored_at):.1f} s after stored; done {done_at - stored_at:.1f} s after stored "
        f"(CPU µs/row from stored to done: {per_row(cpu_stored, cpu_done, rows)}); "
        f"{poller.report()}; "
        f"created {imp['created']:,}, updated {imp['updated']:,}, skipped {imp['skipped']:,}"
    )


async def left_to_enrich(url: str, import_ids: list[str]) -> int:
    """The import's leads not enriched yet (`enriched_at` null): those the merge stored before their mail
    domain was looked up, left for the `enrich` worker after storing (a diagnostic read, once, at stored)."""
    from sqlalchemy import bindparam, text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            query = text(
                "SELECT count(*) FROM leads WHERE import_id IN :ids AND enriched_at IS NULL"
            ).bindparams(bindparam("ids", expanding=True))
            return int((await conn.execute(query, {"ids": import_ids})).scalar_one())
    finally:
        await engine.dispose()


def upload_at_once(
    base: str, key: str, list_id: str, existing: str, bodies: list[list[dict[str, Any]]], concurrency: int
) -> list[str]:
    """`--concurrency N`: N uploaders at once, each a client of its own sending an import of its own (chunk
    j of the file goes to uploader j mod N), its chunks one after the other, its last one final. Returns the
    imports' ids."""
    ids: list[str] = [""] * concurrency
    failed: list[BaseException] = []

    def upload(k: int) -> None:
        try:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=600) as c:
                mine = bodies[k::concurrency]
                for n, rows in enumerate(mine):
                    body: dict[str, Any] = {"rows": rows, "final": n == len(mine) - 1, "existing": existing}
                    if n == 0:
                        body["list"] = {"id": list_id}
                    else:
                        body["importId"] = ids[k]
                    response = c.post("/api/v1/leads/import", json=body)
                    response.raise_for_status()
                    ids[k] = response.json()["id"]
        except BaseException as exc:  # reported by the main thread
            failed.append(exc)

    threads = [threading.Thread(target=upload, args=(k,)) for k in range(min(concurrency, len(bodies)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]
    return [i for i in ids if i]


def wait_for_the_workers(http: httpx.Client) -> float:
    """Import one row and wait until it is stored: the worker process of `outreach serve` has started and
    merges. Without this the first import's chunks met no merge for the seconds the worker process takes to
    start (its imports), and on SQLite they were accepted faster than a running service accepts them (a
    chunk waits for the merge transaction in progress). The row is deleted again. Returns the seconds it
    took."""
    started = time.perf_counter()
    imp = http.post("/api/v1/leads/import", json={"rows": [{"email": "warm-up@example.org"}], "final": True})
    imp.raise_for_status()
    while http.get(f"/api/v1/leads/imports/{imp.json()['id']}").json()["queued"]:
        time.sleep(0.1)
    # deleted again: the workspace's contacts limit (the agency plan's million) stays the measured imports'
    warm = http.get("/api/v1/leads", params={"search": "warm-up@example.org"}).json()["leads"]
    http.post("/api/v1/leads/delete", json={"target": {"ids": [w["id"] for w in warm]}}).raise_for_status()
    return time.perf_counter() - started


async def _database_oid(url: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        return int(await conn.fetchval("SELECT oid FROM pg_database WHERE datname = current_database()"))
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--existing", default="skip,update", help="imports to run, in order")
    parser.add_argument("--autovacuum", choices=["on", "off"], default="on", help="PostgreSQL only")
    parser.add_argument("--stop-during", action="store_true", help="SIGTERM the server after the last chunk")
    parser.add_argument(
        "--no-poll", action="store_true", help="no pages polled during the import (CPU of the import alone)"
    )
    parser.add_argument(
        "--change",
        choices=["title", "custom"],
        help="update imports give every row a new value of this field (default: identical rows)",
    )
    parser.add_argument(
        "--wal-by-database",
        metavar="DATABASE",
        help="PostgreSQL: read the WAL as it is written (pg_walinspect, from a connection to DATABASE, "
        "created beforehand) and report this database's share per row",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="uploaders at once, each sending an import of its own (the rows split by chunk between them)",
    )
    args = parser.parse_args()
    dns_port = start_dns()
    extra = {"OUTREACH_DNS_NAMESERVERS": f"127.0.0.1:{dns_port}"}
    with (
        served(plan="agency", workers=True, env_extra=extra) as server,
        httpx.Client(
            base_url=server.base, headers={"Authorization": f"Bearer {server.key}"}, timeout=600
        ) as http,
    ):
        url = server.env["OUTREACH_DATABASE_URL"]
        note = ""
        database = None
        if url.startswith("postgresql"):
            asyncio.run(set_autovacuum(url, args.autovacuum == "on"))
            note = f", autovacuum {args.autovacuum}"
            database = url.rsplit("/", 1)[1].split("?")[0]
        assert server.process is not None
        cpu = CpuMeter(server.process.pid, database)
        cpu.start()
        warm = wait_for_the_workers(http)
        print(
            f"{server.engine}{note}, {args.rows:,} rows per import, `outreach serve` as the README starts it "
            f"(workers in its children, merging {warm:.1f} s after the server answered); load average "
            f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
            flush=True,
        )
        wal = None
        our_oid = ""
        if database is not None and args.wal_by_database:
            wal = WalByDatabase(url, args.wal_by_database)
            wal.start()
            our_oid = str(asyncio.run(_database_oid(url)))
        modes = args.existing.split(",")
        for n, mode in enumerate(modes):
            stop = args.stop_during and n == len(modes) - 1
            line = one_import(
                http,
                server.base,
                server.key,
                args.rows,
                mode,
                stop,
                cpu,
                not args.no_poll,
                args.change,
                url if database is not None else None,
                wal,
                our_oid,
                args.concurrency,
                url,
            )
            print(line, flush=True)
        print(f"load average at the end {os.getloadavg()[0]:.2f}", flush=True)
        if args.stop_during:
            assert server.process is not None
            started = time.perf_counter()
            server.process.send_signal(signal.SIGTERM)
            server.process.wait(timeout=120)
            print(f"SIGTERM during the merge: the server exited after {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
