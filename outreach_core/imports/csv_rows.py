"""Lead rows out of a CSV file as people export it from a spreadsheet or a CRM (pure: the standard library).

What a person's file looks like is guessed the way a spreadsheet would, and every guess can be overridden:

- **encoding**: a byte-order mark says UTF-8 or UTF-16; UTF-16 without one is recognised by its zero bytes;
  otherwise UTF-8 when the bytes are valid UTF-8, else Windows-1252 (a superset of Latin-1 for text; bytes it
  leaves undefined are read as Latin-1);
- **delimiter**: comma, semicolon (spreadsheets in most of Europe), tab or pipe, whichever splits the first
  lines into the same number of cells most often (`csv.Sniffer` as a second opinion);
- **header row**: the first of the first 20 rows with a cell naming the email column (files often start
  with a title or a blank line);
- **columns**: common names are mapped to lead fields (`Email`, `E-mail`, `First Name`, `Company Name` ...,
  see `ALIASES`; case, spaces and punctuation ignored); `--map field=Column` overrides; a `Name`/`Full Name`
  column fills first and last name when there is no separate first-name column; every other column goes to
  `custom` under its header (at most 50).

A row whose value is longer than its field allows cannot be imported as it is: it is left out and counted
(`invalid` on the import, through `clientInvalid`), with its line number, rather than cut short."""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from outreach_core.imports.schemas import TEXT_LIMITS
from outreach_core.kernel.wire import unstorable

HEADER_SEARCH_ROWS = 20
MAX_CUSTOM_COLUMNS = 50
MAX_CUSTOM_KEY = 64
DELIMITERS = ",;\t|"

ALIASES: dict[str, tuple[str, ...]] = {
    "email": ("email", "emailaddress", "mail", "workemail", "businessemail", "emailid", "contactemail"),
    "firstName": ("firstname", "first", "givenname", "fname", "forename", "vorname", "prenom"),
    "lastName": ("lastname", "last", "surname", "familyname", "lname", "nachname", "nom"),
    "company": (
        "company", "companyname", "organization", "organisation", "org", "account", "accountname",
        "employer", "firma", "business", "businessname",
    ),
    "title": ("title", "jobtitle", "job", "position", "role", "jobrole", "designation"),
    "website": ("website", "companywebsite", "url", "web", "site", "websiteurl", "companyurl", "domain"),
    "phone": ("phone", "phonenumber", "mobile", "telephone", "tel", "mobilephone", "workphone", "cell"),
    "linkedin": ("linkedin", "linkedinurl", "linkedinprofile", "linkedinprofileurl", "personlinkedinurl"),
    "country": ("country", "countrycode", "countryname", "land"),
    "timezone": ("timezone", "tz", "timezonename"),
}  # fmt: skip
"""Lead field (wire name) -> header names that mean it, normalised by `header_key`."""
FULL_NAME = ("name", "fullname", "contactname", "contact", "person")
FIELDS = tuple(ALIASES)

_ALIAS_OF = {alias: name for name, aliases in ALIASES.items() for alias in aliases}


class CsvProblem(ValueError):
    """The file cannot be read as a lead list; the message says why and what to do."""


def header_key(text: str) -> str:
    """A header as compared with `ALIASES`: lower case, letters and digits only (`E-mail` -> `email`)."""
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def decode(data: bytes) -> tuple[str, str]:
    """The text of a CSV file and the encoding it was read with (see the module docstring)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace"), "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace"), "utf-16"
    head = data[:4096]
    if head and head.count(0) * 4 > len(head):  # ASCII text in UTF-16 is half zero bytes
        odd_zeros = head[1::2].count(0)
        encoding = "utf-16-le" if odd_zeros > head[0::2].count(0) else "utf-16-be"
        return data.decode(encoding, errors="replace"), encoding
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "windows-1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def sniff_delimiter(text: str) -> str:
    """The delimiter that splits the first lines into the same number (>1) of cells most often."""
    lines = [line for line in text.splitlines()[: HEADER_SEARCH_ROWS + 5] if line.strip()]
    if not lines:
        return ","
    best, best_score = ",", 0
    for delimiter in DELIMITERS:
        widths = [len(row) for row in csv.reader(lines, delimiter=delimiter)]
        common = max(set(widths), key=widths.count)
        score = widths.count(common) if common > 1 else 0
        if score > best_score:
            best, best_score = delimiter, score
    if best_score == 0:
        try:
            return csv.Sniffer().sniff("\n".join(lines), delimiters=DELIMITERS).delimiter
        except csv.Error:
            return ","
    return best


@dataclass
class Columns:
    """Which cell of a row fills which lead field."""

    header_line: int  # 1-based line of the header row
    fields: dict[str, int]  # wire field name -> cell index
    custom: dict[str, int]  # custom key -> cell index
    full_name: int | None = None
    ignored: list[str] = field(default_factory=list)  # headers beyond the custom limit

    def described(self, header: list[str]) -> dict[str, str]:
        """Field -> the column header it is read from (what the command shows before importing)."""
        shown = {name: header[i] for name, i in self.fields.items()}
        if self.full_name is not None:
            shown.setdefault("firstName", f"{header[self.full_name]} (first word)")
            shown.setdefault("lastName", f"{header[self.full_name]} (the rest)")
        return shown


def map_columns(header: list[str], overrides: Mapping[str, str], line: int) -> Columns:
    """The mapping of a header row: `overrides` (field -> column header, as typed with `--map`) first, then
    the aliases; the rest to `custom`. Raises `CsvProblem` for an override naming an unknown field or
    column."""
    keys = [header_key(h) for h in header]
    fields: dict[str, int] = {}
    for name, column in overrides.items():
        if name not in ALIASES:
            raise CsvProblem(f"--map {name}=...: unknown field; fields are {', '.join(FIELDS)}")
        wanted = header_key(column)
        matches = [i for i, k in enumerate(keys) if k == wanted]
        if not matches:
            raise CsvProblem(
                f"--map {name}={column}: no column {column!r} in the header ({', '.join(header)})"
            )
        fields[name] = matches[0]
    taken = set(fields.values())
    for i, key in enumerate(keys):
        known = _ALIAS_OF.get(key)
        if known is not None and known not in fields and i not in taken:
            fields[known] = i
            taken.add(i)
    full_name = None
    if "firstName" not in fields:
        full_name = next((i for i, k in enumerate(keys) if k in FULL_NAME and i not in taken), None)
        if full_name is not None:
            taken.add(full_name)
    custom: dict[str, int] = {}
    ignored: list[str] = []
    for i, text in enumerate(header):
        key = text.strip()[:MAX_CUSTOM_KEY]
        if i in taken or not key or unstorable(key) or key in custom:
            continue
        if len(custom) >= MAX_CUSTOM_COLUMNS:
            ignored.append(text)
            continue
        custom[key] = i
    return Columns(line, fields, custom, full_name, ignored)


@dataclass
class CsvRows:
    """A CSV file read as import rows (wire form, as `POST /leads/import` takes them)."""

    encoding: str
    delimiter: str
    header: list[str]
    columns: Columns
    rows: list[dict[str, object]]
    rejected: list[tuple[int, str]]  # (line, why) of rows left out

    @property
    def rejected_count(self) -> int:
        return len(self.rejected)


def read_csv(data: bytes, overrides: Mapping[str, str] | None = None) -> CsvRows:
    """Every data row of a CSV file as an import row; rows with no value at all are skipped."""
    text, encoding = decode(data)
    return read_csv_text(text, overrides, encoding=encoding)


def read_csv_text(
    text: str, overrides: Mapping[str, str] | None = None, *, encoding: str = "utf-8"
) -> CsvRows:
    """`read_csv` for text already decoded (the MCP tool's `csv` argument)."""
    # NULs and unpaired surrogates (JSON text can hold them) cannot be stored: dropped and replaced
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    delimiter = sniff_delimiter(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    overrides = dict(overrides or {})
    head: list[list[str]] = []
    columns: Columns | None = None
    header: list[str] = []
    for row in reader:
        head.append(row)
        try:
            candidate = map_columns(row, overrides, reader.line_num)
        except CsvProblem:  # an override naming a column this row lacks: a title line, or a wrong --map
            if _names_email(row, overrides):
                raise  # the header row: the override is wrong
            candidate = None
        if candidate is not None and "email" in candidate.fields:
            columns, header = candidate, row
            break
        if len(head) >= HEADER_SEARCH_ROWS:
            break
    if columns is None:
        raise CsvProblem(
            "no header row naming an email column in the first 20 lines; name it with --map email=<Column> "
            '(the MCP tool: map {"email": "<Column>"})'
        )
    rows: list[dict[str, object]] = []
    rejected: list[tuple[int, str]] = []
    for cells in reader:
        values, why = _row(cells, columns)
        if why is not None:
            rejected.append((reader.line_num, why))
        elif values:
            rows.append(values)
    return CsvRows(encoding, delimiter, header, columns, rows, rejected)


def _names_email(row: list[str], overrides: Mapping[str, str]) -> bool:
    """Whether `row` has the email column (the one `overrides` names, else one of its aliases)."""
    if "email" in overrides:
        return header_key(overrides["email"]) in {header_key(c) for c in row}
    return any(_ALIAS_OF.get(header_key(c)) == "email" for c in row)


def _cell(cells: list[str], index: int) -> str | None:
    if index >= len(cells):
        return None
    value = cells[index].strip()
    return value or None


def _row(cells: list[str], columns: Columns) -> tuple[dict[str, object], str | None]:
    row: dict[str, object] = {}
    for name, index in columns.fields.items():
        value = _cell(cells, index)
        if value is not None:
            row[name] = value
    if columns.full_name is not None:
        full = _cell(cells, columns.full_name)
        if full is not None:
            first, _, last = full.partition(" ")
            row["firstName"] = first
            if last.strip():
                row.setdefault("lastName", last.strip())
    custom = {key: text for key, i in columns.custom.items() if (text := _cell(cells, i)) is not None}
    if custom:
        row["custom"] = custom
    for name, stored in row.items():
        limit = TEXT_LIMITS.get(name)
        if limit is not None and isinstance(stored, str) and len(stored) > limit:
            return {}, f"{name} is longer than {limit:,} characters"
    return row, None


def chunks(rows: list[dict[str, object]], size: int) -> Iterator[list[dict[str, object]]]:
    """`rows` in consecutive chunks of `size` (the last one shorter)."""
    for start in range(0, len(rows), size):
        yield rows[start : start + size]
