"""Pure rules of the suppression list: what an entry means."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from outreach_core.targets.rules import normalize_domain, normalize_email

Kind = Literal["email", "domain"]
MAX_INVALID_SHOWN = 100


def parse_entry(raw: str) -> tuple[Kind, str] | None:
    """`(kind, value)` for one entry, or None when it is neither an address nor a domain.

    An entry with an `@` after its first character is an address (`Ann@Example.com` -> `ann@example.com`);
    anything else is a domain (`example.com`, `@example.com`, `Example.COM.` -> `example.com`). Values are
    normalised exactly as lead addresses are, so they match the leads they are meant to stop.
    """
    text = raw.strip()
    if "@" in text[1:]:
        parsed = normalize_email(text)
        return ("email", parsed[0]) if parsed is not None else None
    domain = normalize_domain(text)
    return ("domain", domain) if domain is not None else None


@dataclass
class ParsedEntries:
    """Entries of one request: distinct values in first-seen order, and the entries that were invalid."""

    values: dict[str, Kind] = field(default_factory=dict)
    invalid: int = 0
    invalid_entries: list[str] = field(default_factory=list)

    @property
    def emails(self) -> list[str]:
        return [v for v, k in self.values.items() if k == "email"]

    @property
    def domains(self) -> list[str]:
        return [v for v, k in self.values.items() if k == "domain"]


def parse_entries(entries: list[str]) -> ParsedEntries:
    """Normalise every entry; repeats (after normalisation) count once, invalid ones are counted and the
    first `MAX_INVALID_SHOWN` of them kept to report back."""
    out = ParsedEntries()
    for raw in entries:
        parsed = parse_entry(raw)
        if parsed is None:
            out.invalid += 1
            if len(out.invalid_entries) < MAX_INVALID_SHOWN:
                out.invalid_entries.append(raw)
            continue
        kind, value = parsed
        out.values.setdefault(value, kind)
    return out
