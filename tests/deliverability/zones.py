"""DNS zones of the domain checker's tests, published on the session's dnslib server: a domain with every
record right, and domains with missing or broken records of each kind. Names are unique per call, so tests
(and the 10-minute cache) never see each other's records."""

from __future__ import annotations

import base64
import itertools
import os
from functools import cache

from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.dns_server import DnsServer

DNSBL = "bl.deliv-zones.org"
DBL = "dbl.deliv-zones.org"
GOOGLE_MX = "aspmx.l.google.com"
GOOGLE_MX_IP = "142.250.102.27"
LISTED_IP = "198.51.100.66"

_unique = itertools.count(1)


def unique_domain(stem: str) -> str:
    return f"{stem}{next(_unique)}-{os.getpid()}.com"


@cache
def rsa_key(bits: int) -> str:
    """The base64 SubjectPublicKeyInfo of a fresh RSA key of `bits` (a DKIM record's p=)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits).public_key()
    return base64.b64encode(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).decode()


@cache
def ed25519_key() -> str:
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    return base64.b64encode(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def txt(text: str) -> str:
    """A TXT value for the zone file, split in 200-character strings as publishers do."""
    return " ".join('"' + text[i : i + 200] + '"' for i in range(0, len(text), 200))


def publish_google(dns: DnsServer) -> None:
    """Google's MX host and SPF include, as the real ones look."""
    dns.remove(GOOGLE_MX, "A")
    dns.add(GOOGLE_MX, "A", GOOGLE_MX_IP)
    dns.remove("_spf.google.com", "TXT")
    dns.add("_spf.google.com", "TXT", txt("v=spf1 ip4:35.190.247.0/24 ip4:64.233.160.0/19 ~all"))


def good(dns: DnsServer, stem: str = "good") -> str:
    """Google Workspace with SPF, a 2048-bit DKIM key, DMARC quarantine with reports: every check passes."""
    publish_google(dns)
    domain = unique_domain(stem)
    dns.add(domain, "A", "203.0.113.80")
    dns.add(domain, "MX", f"1 {GOOGLE_MX}.")
    dns.add(domain, "TXT", txt("v=spf1 include:_spf.google.com ~all"), txt("google-site-verification=abc"))
    dns.add(f"google._domainkey.{domain}", "TXT", txt(f"v=DKIM1; k=rsa; p={rsa_key(2048)}"))
    dns.add(f"_dmarc.{domain}", "TXT", txt(f"v=DMARC1; p=quarantine; rua=mailto:dmarc@{domain}"))
    return domain


def bare(dns: DnsServer) -> str:
    """A domain with a web server only: no MX, SPF, DKIM or DMARC."""
    domain = unique_domain("bare")
    dns.add(domain, "A", "203.0.113.81")
    return domain


def without(dns: DnsServer, name: str, rdtype: str, stem: str = "partial") -> str:
    """`good` with one record set removed (`name` relative: "" = the domain, "_dmarc" ...)."""
    domain = good(dns, stem)
    dns.remove(f"{name}.{domain}" if name else domain, rdtype)
    return domain


def with_record(dns: DnsServer, name: str, rdtype: str, *values: str, stem: str = "broken") -> str:
    """`good` with the records of `name`/`rdtype` replaced by `values`."""
    domain = good(dns, stem)
    full = f"{name}.{domain}" if name else domain
    dns.remove(full, rdtype)
    dns.add(full, rdtype, *values)
    return domain
