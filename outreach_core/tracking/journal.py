"""The tracking journal: every hit appended to a local file before its request is answered, so a hit answered
and not yet committed survives the death of the process (docs/tracking.md, "What a crash can lose").

A server process writes to segments of its own, `tracking-<pid>-<random>.jsonl` in the journal directory,
each locked (`flock`) for as long as the process lives. The recorder starts a new segment each time it takes
a batch and deletes the old one once the batch is committed. A segment whose lock can be taken belongs to a
process that died: its hits are replayed at the next start (`orphans`, `read`), skipping those already
committed (each hit carries the id of its `tracking_events` row). Appends go to the operating system at
once (one `write` each), which survives the process being killed, not the machine losing power.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import orjson

from outreach_core.tracking.rules import Hit

_PREFIX, _SUFFIX = "tracking-", ".jsonl"


@dataclass(frozen=True)
class Segment:
    fd: int
    path: Path


class Journal:
    """This process's journal segments in `directory`."""

    def __init__(self, directory: Path) -> None:
        make_private_dirs(directory)
        self.directory = directory
        self.current = self._new_segment()

    def _new_segment(self) -> Segment:
        path = self.directory / f"{_PREFIX}{os.getpid()}-{secrets.token_hex(8)}{_SUFFIX}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return Segment(fd, path)

    def append(self, hit: Hit) -> None:
        os.write(self.current.fd, encode(hit))

    def rotate(self) -> Segment:
        """Start a new segment for the hits from now on; returns the one that holds the hits so far."""
        old, self.current = self.current, self._new_segment()
        return old

    @staticmethod
    def discard(segment: Segment) -> None:
        """Delete a segment whose hits are committed."""
        segment.path.unlink(missing_ok=True)
        os.close(segment.fd)

    def close(self) -> None:
        """At a clean stop, every hit committed: the current segment goes too."""
        self.discard(self.current)


def make_private_dirs(directory: Path) -> None:
    """Create `directory` and its missing parents readable by this user only (mode 0700: the hits hold
    addresses and user agents); an existing one is left as it is."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    for d in reversed(missing):
        d.mkdir(mode=0o700, exist_ok=True)


def orphans(directory: Path) -> list[Segment]:
    """The segments of processes that died (their lock can be taken), locked now by this process."""
    found = []
    for path in sorted(directory.glob(f"{_PREFIX}*{_SUFFIX}")):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # a live process's
            continue
        found.append(Segment(fd, path))
    return found


def read(segment: Segment) -> list[Hit]:
    """The hits of a segment; a line cut short by the crash is skipped."""
    hits = []
    for line in segment.path.read_bytes().splitlines():
        try:
            hits.append(decode(line))
        except (ValueError, KeyError, TypeError):
            continue
    return hits


def encode(hit: Hit) -> bytes:
    fields = [
        hit.id,
        hit.kind,
        hit.send_id,
        hit.at.isoformat(),
        hit.url,
        hit.head,
        hit.user_agent,
        hit.address,
    ]
    try:  # orjson: the same JSON as json.dumps for `decode`, in a tenth of the time (once per hit)
        return orjson.dumps(fields) + b"\n"
    except TypeError:  # a lone surrogate in a target URL, which orjson refuses and json escapes
        return json.dumps(fields, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> Hit:
    hit_id, kind, send_id, at, url, head, agent, address = json.loads(line)
    if kind not in ("open", "click") or not isinstance(send_id, str) or not isinstance(hit_id, str):
        raise ValueError("not a hit")
    when = dt.datetime.fromisoformat(at)
    if when.tzinfo is None:
        raise ValueError("naive time")
    return Hit(kind, send_id, when, url, bool(head), str(agent), address, hit_id)
