"""What one domain check learned from the outside (DNS answers, RDAP), as plain data: `lookups` fills it in,
`rules` grades it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Answer:
    """A DNS question's answers as text (empty: NXDOMAIN or no such records), or why there is none."""

    records: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class Rdap:
    """What RDAP said: the registration date, or why it is unknown (`error`), or not configured."""

    configured: bool
    registered: datetime | None = None
    error: str | None = None


@dataclass
class Facts:
    """Everything one domain check learned from the outside."""

    domain: str
    selector: str | None
    presence: list[Answer] = field(default_factory=list)  # A, NS, SOA of the domain itself
    mx: Answer = field(default_factory=Answer)
    mx_addresses: dict[str, Answer] = field(default_factory=dict)  # MX host -> A answers
    spf: dict[str, Answer] = field(default_factory=dict)  # the domain and every include/redirect -> TXT
    dmarc: Answer = field(default_factory=Answer)
    dmarc_org: tuple[str, Answer] | None = None  # the organizational domain's record, for a subdomain
    dkim: dict[str, Answer] = field(default_factory=dict)  # selector -> TXT
    dnsbl: dict[tuple[str, str], Answer] = field(default_factory=dict)  # (IPv4, zone) -> A
    dbl: dict[str, Answer] = field(default_factory=dict)  # zone -> A
    dnsbl_zones: list[str] = field(default_factory=list)
    dbl_zones: list[str] = field(default_factory=list)
    rdap: Rdap = field(default_factory=lambda: Rdap(False))
