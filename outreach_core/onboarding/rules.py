"""Pure onboarding rules: what a typed-in domain or website address means."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_DOMAIN = re.compile(
    r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$"
)


def normalize_domain(value: str) -> str | None:
    """The domain in what a person typed (`Acme.com`, `https://www.acme.com/about`, `me@acme.com`), lower
    case, international names in their ASCII form; None when it is not a domain name."""
    text = value.strip().lower()
    if "@" in text and "://" not in text:
        text = text.rsplit("@", 1)[1]
    if "://" in text or "/" in text:
        try:
            text = urlsplit(text if "://" in text else f"https://{text}").hostname or ""
        except ValueError:
            return None
    text = text.rstrip(".")
    try:
        text = text.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    return text if _DOMAIN.fullmatch(text) else None


def website_url(value: str) -> str:
    """The URL to fetch for what a person typed: https:// added when no scheme was given."""
    text = value.strip()
    return text if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text) else f"https://{text}"
