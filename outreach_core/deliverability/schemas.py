"""Wire models of the domain checker and sending domains (spec: "Domain check report", "Domain list item";
the mailbox `dns` field)."""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from outreach_core.deliverability.rules import normalize_domain, normalize_selector
from outreach_core.kernel.wire import NamedPattern, Timestamp, WireModel

Status = Literal["pass", "warn", "fail", "info"]
Badge = Status
Grade = Literal["A", "B", "C", "D", "F"]
MxFamily = Literal["google", "microsoft", "other", "none"]
SourceKind = Literal["rfc", "provider", "opinion"]

_LABEL = "[a-z0-9]{1,20}(?:-[a-z0-9]{1,20})?"


@functools.cache
def _domain_pattern() -> str:
    """A domain under a top-level domain of the public suffix list (ICANN section) that registers names
    directly, in lower-case ASCII: the form every server accepts. URLs, email addresses, upper case and
    international names are accepted too (the field's description)."""
    import tldextract

    extractor = tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True, include_psl_private_domains=False
    )
    rules = set(extractor.tlds)
    # the top-level domains with a public suffix of more labels under them (co.uk): found in one pass over the
    # rules (asking each top-level domain whether any rule ends with it was 1.1 s of every server's start-up)
    parents = {s.rsplit(".", 1)[1] for s in rules if "." in s}
    tlds = sorted(
        r
        for r in rules
        if "." not in r
        and r.isascii()
        and r.isalpha()
        and r not in ("arpa", "onion")
        and f"*.{r}" not in rules
        # a label before the TLD that is itself a public suffix there (co.uk) would not be registrable
        and r not in parents
    )
    return f"^(?:{_LABEL}\\.){{1,3}}(?:{'|'.join(tlds)})$"


DOMAIN_NAME = NamedPattern("domain-name", _domain_pattern)

DomainText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=300,
        description="A domain (example.com), a URL (https://www.example.com/about) or an email address "
        "(ann@example.com); international names are accepted and checked as their A-labels. Not an IP "
        "address, localhost or a public suffix alone (co.uk).",
    ),
    DOMAIN_NAME,
    AfterValidator(normalize_domain),
]
Selector = Annotated[
    str,
    Field(
        min_length=1,
        max_length=130,
        pattern=r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$",
        description="A custom DKIM selector (the part before ._domainkey), checked beside the common ones.",
    ),
    AfterValidator(normalize_selector),
]


class CheckQuery(WireModel):
    domain: DomainText
    selector: Selector | None = Field(
        default=None,
        description="A custom DKIM selector (the part before ._domainkey), checked beside the common ones.",
    )


class DomainIn(WireModel):
    domain: DomainText


class CheckSource(WireModel):
    kind: SourceKind = Field(
        description="Where the rule comes from: rfc (an Internet standard), provider (a mailbox provider's "
        "published sender rules, e.g. Google's and Yahoo's of 2024) or opinion (this service's advice)."
    )
    reference: str = Field(description="The document, e.g. RFC 7208 section 4.6.4.")


class Check(WireModel):
    id: str
    label: str
    status: Status = Field(description="info = could not be checked (with the reason) or only advice.")
    points: float
    max: float
    summary: str
    details: list[str]
    fix: str | None = Field(description="What to do, with the exact record to publish where it can be said.")
    source: CheckSource


class DomainReport(WireModel):
    domain: str = Field(description="The domain checked, as its A-labels (punycode) in lower case.")
    selector: str | None
    exists: bool
    score: int = Field(ge=0, le=100)
    grade: Grade
    verdict: str
    mx_family: MxFamily
    mx_label: str
    checked_at: Timestamp
    duration_ms: float
    cached: bool
    checks: list[Check]


class HistoryPoint(WireModel):
    score: int
    checked_at: Timestamp


class DomainItem(WireModel):
    domain: str
    mailboxes: int = Field(description="Connected mailboxes of the workspace on this domain.")
    report: DomainReport | None = Field(description="The latest check; null until the first one finished.")
    history: list[HistoryPoint] = Field(description="Up to 30 earlier scores, oldest first.")


class DnsBadges(WireModel):
    mx: Badge | None
    spf: Badge | None
    dkim: Badge | None
    dmarc: Badge | None
    blacklists: Badge | None


class MailboxDns(WireModel):
    score: float | None
    grade: str | None
    checked_at: Timestamp | None
    badges: DnsBadges
