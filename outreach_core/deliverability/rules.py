"""The domain checker's rules (pure: no I/O): reading what a person typed as a domain, and the constants the
lookups need. Grading the facts is `grading`; parsing records is `records`.
"""

from __future__ import annotations

import re
from functools import cache
from urllib.parse import urlsplit

import tldextract

from outreach_core.kernel.urls import NotAHost, is_local_name, normal_host, parse_ip

COMMON_SELECTORS = (
    "google",  # Google Workspace
    "selector1",  # Microsoft 365
    "selector2",
    "default",
    "dkim",
    "mail",
    "k1",  # Mailchimp / Mandrill
    "s1",  # SendGrid and others
    "s2",
    "smtp",
    "mx",
    "key1",
    "zmail",  # Zoho
    "protonmail",
    "fm1",  # Fastmail
)
"""DKIM selectors looked up on every check, besides the one given."""

MAX_SPF_NAMES = 40
"""Names of an SPF include/redirect tree fetched at most (the limit of 10 DNS lookups is judged on them)."""

_SELECTOR = re.compile(r"^[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?$")


@cache
def _extractor() -> tldextract.TLDExtract:
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


def organizational_domain(name: str) -> str | None:
    """The registrable domain of `name` (RFC 7489 section 3.2: the organizational domain), or None."""
    parts = _extractor()(name, include_psl_private_domains=False)
    if not parts.suffix or not parts.domain:
        return None
    return f"{parts.domain}.{parts.suffix}"


def normalize_domain(text: str) -> str:
    """What a person typed (a domain, a URL or an email address) as the domain to check: lower-case
    A-labels (IDNA 2008 with the UTS-46 mapping), without a final dot or a URL's `www.`. Raises ValueError
    with a sentence for the person: not a host name, an IP address, localhost, a public suffix alone or a
    name under no public suffix."""
    value = text.strip()
    www = False
    if "://" in value or value.lower().startswith("//"):
        try:
            host = urlsplit(value if "://" in value else "http:" + value).hostname
        except ValueError:
            raise ValueError("not a valid URL") from None
        if not host:
            raise ValueError("the URL has no host name")
        value, www = host, True
    elif "@" in value:
        value = value.rsplit("@", 1)[1]
    elif "/" in value:  # example.com/about
        value = value.split("/", 1)[0]
    if not value:
        raise ValueError("give a domain such as example.com")
    try:
        name = normal_host(value)
    except NotAHost as exc:
        raise ValueError(str(exc)) from None
    if parse_ip(name) is not None:
        raise ValueError(f"{value} is an IP address; give the domain you send email from")
    if is_local_name(name):
        raise ValueError(f"{value} is a local name, not a domain on the Internet")
    if www and name.startswith("www.") and organizational_domain(name[4:]) is not None:
        name = name[4:]
    registrable = organizational_domain(name)
    if registrable is None:
        parts = _extractor()(name, include_psl_private_domains=False)
        if parts.suffix and not parts.domain:
            raise ValueError(f"{value} is a public suffix (like co.uk), not a domain one can own")
        raise ValueError(f"{value} is not under a public suffix such as .com or .co.uk")
    return name


def normalize_selector(text: str) -> str:
    """A DKIM selector in lower case; ValueError when it is not DNS labels of letters, digits, `-` and `_`."""
    selector = text.strip().lower().rstrip(".")
    if not _SELECTOR.match(selector) or ".." in selector or any(len(p) > 63 for p in selector.split(".")):
        raise ValueError("a selector is DNS labels of letters, digits, hyphens and underscores (e.g. s1)")
    return selector
