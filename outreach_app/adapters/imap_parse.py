"""Reading the IMAP responses the inbox worker needs (RFC 3501), as aioimaplib hands them over: a list of
lines (`bytes`) with each literal as its own `bytearray` element, the untagged `* ` prefix removed.

Pure functions; every one tolerates what it does not understand (it is skipped, never raised on).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_INTERNALDATE = re.compile(
    r"^\s*(\d{1,2})-([A-Za-z]{3})-(\d{4}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\s*$"
)
_FETCH_START = re.compile(rb"^(\d+) FETCH \(", re.IGNORECASE)
_UID = re.compile(rb"\bUID (\d+)", re.IGNORECASE)
_DATE = re.compile(rb'\bINTERNALDATE "([^"]+)"', re.IGNORECASE)
_SIZE = re.compile(rb"\bRFC822\.SIZE (\d+)", re.IGNORECASE)
_BODY_NIL = re.compile(rb"\bBODY\[\](?:<\d+>)? NIL", re.IGNORECASE)
_LIST = re.compile(rb'^\((?P<flags>[^)]*)\) (?P<delim>NIL|"(?:\\.|[^"\\])*") (?P<name>.*)$', re.IGNORECASE)
_LITERAL_END = re.compile(rb"\{(\d+)\}$")
_EXISTS = re.compile(rb"^(\d+) EXISTS\b", re.IGNORECASE)

SENT_NAMES = ("Sent", "Sent Items", "Sent Messages", "INBOX.Sent")
"""The Sent folder by name (any case, in this order) when none is marked `\\Sent`."""
JUNK_NAMES = ("junk", "spam", "junk e-mail", "inbox.junk", "inbox.spam", "[gmail]/spam")
"""Junk folder names tried, in order, when no folder carries the SPECIAL-USE `\\Junk` flag."""


def text_lines(lines: Iterable[bytes | bytearray]) -> list[bytes]:
    return [bytes(line) for line in lines if not isinstance(line, bytearray)]


def parse_internaldate(value: str) -> datetime | None:
    """`24-Nov-2026 00:10:00 +0100` -> an aware UTC datetime; None when it is not one."""
    found = _INTERNALDATE.match(value)
    if not found:
        return None
    day, month, year, hh, mm, ss, sign, oh, om = found.groups()
    try:
        number = _MONTHS.index(month.capitalize()) + 1
        offset = timedelta(hours=int(oh), minutes=int(om))
        zone = timezone(-offset if sign == "-" else offset)
        when = datetime(int(year), number, int(day), int(hh), int(mm), int(ss), tzinfo=zone)
    except ValueError:
        return None
    return when.astimezone(UTC)


def search_date(day: date) -> str:
    """A date for SEARCH SINCE: `4-Nov-2026`."""
    return f"{day.day}-{_MONTHS[day.month - 1]}-{day.year}"


def quote(name: str) -> str:
    """A mailbox name as an IMAP quoted string."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def uid_set(uids: Sequence[int]) -> str:
    """Ascending UIDs as a compact IMAP set: `1:3,7,9:10`."""
    parts: list[str] = []
    start = prev = None
    for uid in sorted(set(uids)):
        if start is None:
            start = prev = uid
        elif prev is not None and uid == prev + 1:
            prev = uid
        else:
            parts.append(str(start) if start == prev else f"{start}:{prev}")
            start = prev = uid
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}:{prev}")
    return ",".join(parts)


def search_uids(lines: Iterable[bytes | bytearray]) -> list[int]:
    """The numbers of the `SEARCH` lines of an untagged response (without its tagged status line),
    ascending, without duplicates. aioimaplib drops the `SEARCH` word; lines with anything but numbers
    (an `n EXISTS` pushed meanwhile) are not results."""
    found: set[int] = set()
    for line in text_lines(lines):
        tokens = line.split()
        if tokens and tokens[0].upper() == b"SEARCH":
            tokens = tokens[1:]
        if tokens and all(tok.isdigit() for tok in tokens) and not line.upper().endswith(b"EXISTS"):
            found.update(int(tok) for tok in tokens)
    return sorted(found)


def response_code(lines: Iterable[bytes | bytearray], name: bytes) -> int | None:
    """The number of a response code like `[UIDVALIDITY 123]` anywhere in the response."""
    pattern = re.compile(rb"\[" + re.escape(name) + rb" (\d+)\]", re.IGNORECASE)
    for line in text_lines(lines):
        found = pattern.search(line)
        if found:
            return int(found.group(1))
    return None


def exists_count(lines: Iterable[bytes | bytearray]) -> int | None:
    """The last `n EXISTS` of a response, or None."""
    count = None
    for line in text_lines(lines):
        found = _EXISTS.match(line)
        if found:
            count = int(found.group(1))
    return count


@dataclass(frozen=True)
class ListedFolder:
    name: str
    flags: frozenset[str]


def _unquote(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    return text


def list_folders(lines: Sequence[bytes | bytearray]) -> list[ListedFolder]:
    """The folders of a LIST response (names as the server spells them, literal names included)."""
    folders: list[ListedFolder] = []
    for i, line in enumerate(lines):
        if isinstance(line, bytearray):
            continue
        text = bytes(line)
        if text[:5].upper() == b"LIST ":
            text = text[5:]
        found = _LIST.match(text)
        if not found:
            continue
        flags = frozenset(f.lower() for f in found.group("flags").decode("ascii", "replace").split())
        raw = found.group("name")
        if _LITERAL_END.search(raw) and i + 1 < len(lines) and isinstance(lines[i + 1], bytearray):
            name = bytes(lines[i + 1]).decode("utf-8", "replace")
        else:
            name = _unquote(raw.strip())
        folders.append(ListedFolder(name, flags))
    return folders


def junk_folder(folders: Sequence[ListedFolder]) -> str | None:
    """The junk folder: the first with the `\\Junk` flag, else the first of the usual names."""
    return _special_folder(folders, "\\junk", JUNK_NAMES)


def sent_folder(folders: Sequence[ListedFolder]) -> str | None:
    """The Sent folder: the first with the `\\Sent` flag (RFC 6154), else the first of `SENT_NAMES`."""
    return _special_folder(folders, "\\sent", SENT_NAMES)


def _special_folder(folders: Sequence[ListedFolder], flag: str, names: Sequence[str]) -> str | None:
    """The first selectable folder marked with the SPECIAL-USE `flag` (lower-cased), else the first of
    `names` (any case, in that order)."""
    usable = [f for f in folders if not f.flags & {"\\noselect", "\\nonexistent"}]
    for folder in usable:
        if flag in folder.flags:
            return folder.name
    by_name = {f.name.lower(): f.name for f in usable}
    for name in names:
        if name.lower() in by_name:
            return by_name[name.lower()]
    return None


@dataclass
class FetchRecord:
    """One `n FETCH (...)` answer: its text parts joined and its literal (the body)."""

    text: bytes = b""
    body: bytes | None = None
    extra: list[bytes] = field(default_factory=list)

    def uid(self) -> int | None:
        found = _UID.search(self.text)
        return int(found.group(1)) if found else None

    def arrived_at(self) -> datetime | None:
        found = _DATE.search(self.text)
        return parse_internaldate(found.group(1).decode("ascii", "replace")) if found else None

    def size(self) -> int | None:
        found = _SIZE.search(self.text)
        return int(found.group(1)) if found else None

    def body_nil(self) -> bool:
        return bool(_BODY_NIL.search(self.text))


def fetch_records(lines: Sequence[bytes | bytearray]) -> list[FetchRecord]:
    """Group a FETCH response into one record per message (items in any order, the body a literal)."""
    records: list[FetchRecord] = []
    current: FetchRecord | None = None
    for line in lines:
        if isinstance(line, bytearray):
            if current is not None:
                if current.body is None:
                    current.body = bytes(line)
                else:
                    current.extra.append(bytes(line))
            continue
        if _FETCH_START.match(line):
            current = FetchRecord(text=bytes(line))
            records.append(current)
        elif current is not None and not line.upper().startswith((b"OK", b"NO", b"BAD")):
            current.text += b" " + bytes(line)
    return records
