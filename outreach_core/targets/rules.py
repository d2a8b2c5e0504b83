"""Pure rules for leads: address normalisation and the derived search/sort columns."""

from __future__ import annotations

import re
from typing import Any

import email_validator

# The fast path: plain ASCII addresses as they appear in lead lists. Anything else goes through
# email-validator (IDN domains, unicode local parts, quoted strings are refused there or normalised).
_ASCII_EMAIL = re.compile(
    r"^(?P<local>[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*)"
    r"@(?P<domain>(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})$"
)
MAX_EMAIL = 254


def normalize_email(raw: Any) -> tuple[str, str] | None:
    """`(address, domain)` in canonical form, or None when `raw` is not a usable email address.

    Canonical form: surrounding whitespace and a `mailto:` prefix removed, the whole address lower-cased
    (providers treat local parts case-insensitively in practice, and deduplication needs one spelling),
    internationalised domains in their IDNA (punycode) form. Display names and quoted local parts are not
    accepted: a lead list cell should hold an address, nothing else.
    """
    if not isinstance(raw, str):
        return None
    value = raw.strip()
    if value[:7].lower() == "mailto:":
        value = value[7:]
    value = value.lower()
    if not value or len(value) > MAX_EMAIL:
        return None
    match = _ASCII_EMAIL.match(value)
    if match is not None:
        # the pattern itself keeps every domain label within 63 characters
        if match.end("local") > 64:
            return None
        return value, match.group("domain")
    if value.isascii():
        return None
    try:
        info = email_validator.validate_email(value, check_deliverability=False, allow_quoted_local=False)
    except email_validator.EmailNotValidError:
        return None
    domain = info.ascii_domain
    address = f"{info.local_part.lower()}@{domain}"
    return (address, domain) if len(address) <= MAX_EMAIL else None


def normalize_domain(raw: str) -> str | None:
    """A bare domain for the suppression list (`@example.com`, `example.com.`, upper case all accepted)."""
    value = raw.strip().lower().lstrip("@").rstrip(".")
    try:
        value = value.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    if re.fullmatch(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}", value) is None:
        return None
    return value


def sort_name(first: str | None, last: str | None) -> str:
    return " ".join([p for p in (first, last) if p]).strip().lower()[:401]


def search_text(email: str, first: str | None, last: str | None, company: str | None) -> str:
    """What `search` matches: email, first and last name, company, lower-cased."""
    return " ".join([p for p in (email, first, last, company) if p]).lower()


SEARCH_INDEX_MAX_BYTES = 900
"""A lead's `search_text` longer than this (in UTF-8) stays out of the search indexes (`search_index` NULL)
and is found by testing rows. The sort indexes carry `search_index` (migration 0009) and a PostgreSQL
B-tree entry holds at most 2,704 bytes: with the longest sort key (`sort_name`, 401 characters of up to 4
bytes) and the ids, 900 bytes always fit. A typical lead's text has about 70 bytes."""


def search_index_value(text: str) -> str | None:
    """What `search_index` holds for a lead whose `search_text` is `text` once it is indexed."""
    return text if len(text.encode()) <= SEARCH_INDEX_MAX_BYTES else None


def derived_columns(email: str, first: str | None, last: str | None, company: str | None) -> dict[str, str]:
    """The columns kept from a lead's own fields: `sort_name` (sort=name) and `search_text` (search)."""
    return {"sort_name": sort_name(first, last), "search_text": search_text(email, first, last, company)}


ENRICHMENT_INPUTS = frozenset({"phone", "website", "country", "timezone"})
"""Fields enrichment derives country/timezone from: changing one sends the lead back to enrichment."""
