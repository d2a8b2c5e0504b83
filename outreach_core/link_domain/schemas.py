"""Wire models of the link domain (spec: "Link domain"; DESIGN section 9; docs/link-domain.md)."""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from outreach_core.kernel.wire import NamedPattern, Timestamp, WireModel
from outreach_core.link_domain.rules import (
    MAX_HOSTNAME,
    DnsState,
    Status,
    TlsState,
    checked_domain,
    link_hostname,
)

_LABEL = "[a-z0-9]{1,30}(?:-[a-z0-9]{1,30})?"


@functools.cache
def _tlds() -> str:
    """The top-level domains of the public suffix list (ICANN section) that register names directly."""
    import tldextract

    extractor = tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True, include_psl_private_domains=False
    )
    rules = set(extractor.tlds)
    return "|".join(
        sorted(
            r
            for r in rules
            if "." not in r
            and r.isascii()
            and r.isalpha()
            and r not in ("arpa", "onion")
            and f"*.{r}" not in rules
        )
    )


def _hostname_pattern() -> str:
    """Three labels or more under a top-level domain (`links.mail.example.com`): always a subdomain of a
    registrable domain, whatever second-level suffix the name has. Shorter names (`links.example.com`) and
    international names are accepted too (the field's description); this is the form always accepted."""
    return f"^(?:{_LABEL}\\.){{3,5}}(?:{_tlds()})$"


def _domain_pattern() -> str:
    return f"^(?:{_LABEL}\\.){{2,3}}(?:{_tlds()})$"  # links.<domain> stays within 253 characters


LINK_HOSTNAME = NamedPattern("link-hostname", _hostname_pattern)
CHECKED_DOMAIN = NamedPattern("link-check-domain", _domain_pattern)

Hostname = Annotated[
    str, Field(min_length=1, max_length=MAX_HOSTNAME), LINK_HOSTNAME, AfterValidator(link_hostname)
]
CheckedDomain = Annotated[
    str, Field(min_length=1, max_length=300), CHECKED_DOMAIN, AfterValidator(checked_domain)
]


class SetLinkDomainIn(WireModel):
    hostname: Hostname = Field(
        examples=["links.example.com"],
        description="The host name links in emails will use: a subdomain of a domain you own, such as "
        "links.example.com (at most 253 characters; international names are accepted and stored as "
        "A-labels). Not an IP address, localhost, a public suffix (co.uk) or a whole domain (example.com).",
    )
    replace: bool = Field(
        default=False,
        description="Confirms replacing an active link domain with another host name: links in emails "
        "already sent stop working. Without it, replacing an active one is refused (409).",
    )


class CnameRecord(WireModel):
    type: Literal["CNAME"] = "CNAME"
    name: str = Field(description="The host to add the record on (the link domain).")
    value: str = Field(description="Where it points: this server's link target.")


class LinkDomain(WireModel):
    """GET/PUT /link-domain, POST /link-domain/check: the workspace's link domain and what to do next."""

    hostname: str | None = Field(description="The link domain; null when none is set.")
    status: Status = Field(
        description="none, pending_dns (the CNAME record is missing or wrong), pending_tls (DNS is right, "
        "the certificate is not there yet), active (links in emails use it) or failed (no DNS for a day; "
        "checks stopped until asked again)."
    )
    dns: DnsState = Field(description="What the resolver sees at the host name: ok, missing, wrong, unknown.")
    tls: TlsState = Field(
        description="The certificate, from a real TLS handshake: active, pending, failed (a certificate was "
        "refused) or none (not tried: no host name or DNS not right yet)."
    )
    message: str | None = Field(description="What to do next; null when active.")
    record: CnameRecord | None = Field(description="The DNS record to publish; null without a host name.")
    suggestion: str | None = Field(
        description="links.<sending domain> when nothing is set yet (from the workspace's mailboxes)."
    )
    required: bool = Field(
        description="Campaigns cannot launch without an active link domain on this server."
    )
    verified_at: Timestamp | None = Field(description="When it last became active.")
    checked_at: Timestamp | None = Field(description="When DNS and the certificate were last checked.")


class CheckLinkQuery(WireModel):
    domain: CheckedDomain = Field(
        description="A domain (example.com), an email address or a URL of it; links.<domain> is checked "
        "(at most 300 characters)."
    )


class LinkCname(WireModel):
    """GET /check/link: whether links.<domain> has the CNAME record to this server's link target."""

    hostname: str = Field(description="The host name checked: links.<domain>.")
    target: str | None = Field(
        description="Where the CNAME must point (OUTREACH_LINK_TARGET); null when the server has none."
    )
    dns: DnsState = Field(description="ok, missing, wrong, or unknown (no answer, or no target to compare).")
